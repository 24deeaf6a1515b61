"""The migrated SQLite test database, kept between runs.

On SQLite in memory (no `DATABASE_URL`) every pytest process used to build its
test database from the 84 migrations, about 7 s of CPU each (two xdist workers:
twice). Instead the first process that finds no template copies its freshly
migrated database to `var/test-db/sqlite-<digest>.sqlite3`; the next ones copy
that file into their in-memory database (sqlite3's backup API) before
pytest-django's `migrate` runs, which then finds every migration applied and
applies none (it still runs the post-migrate steps: content types and
permissions of the models as they are now).

The digest covers what the migrated database is made of: every file of every
installed app's migrations package, the project modules those migrations
import (custom fields and the helpers of data migrations), each app's models,
the installed apps, Django's and SQLite's versions, and this file. When any of
them changes, the name changes, and the template is built again by the run
that first needs it (older templates are removed then).
"""

from __future__ import annotations

import ast
import hashlib
import os
import sqlite3
import sys
from collections.abc import Iterator
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "var" / "test-db"


def _test_db_name() -> str | None:
    """The name of the default database's test database, on SQLite (else None)."""
    from django.db import connection
    from django.db.backends.sqlite3.creation import DatabaseCreation

    creation = connection.creation
    if not isinstance(creation, DatabaseCreation):
        return None
    # Private, missing from django-stubs: the name create_test_db gives it.
    return creation._get_test_db_name()  # type: ignore[attr-defined]  # see above


def in_memory_sqlite() -> bool:
    """Whether the tests' default database is SQLite in memory (its test name)."""
    from django.db.backends.sqlite3.creation import DatabaseCreation

    name = _test_db_name()
    return name is not None and DatabaseCreation.is_in_memory_db(name)


def _migrations_folders() -> Iterator[Path]:
    from django.apps import apps
    from django.db.migrations.loader import MigrationLoader

    for app_config in apps.get_app_configs():
        module_name, _ = MigrationLoader.migrations_module(app_config.label)
        if module_name is None:
            continue
        spec = find_spec(module_name) if _parent_importable(module_name) else None
        if spec and spec.submodule_search_locations:
            yield from (Path(p) for p in spec.submodule_search_locations)


def _parent_importable(module_name: str) -> bool:
    parent = module_name.rpartition(".")[0]
    try:
        if parent:
            import_module(parent)
    except ImportError:
        return False
    return True


def _project_modules_imported_by(path: Path) -> Iterator[Path]:
    """The project's own files a migration imports (`import lib.crypto`,
    `from lib.text import ...`), wherever in the file."""
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        else:
            continue
        for name in names:
            spec = find_spec(name) if _parent_importable(name) else None
            origin = Path(spec.origin) if spec and spec.origin else None
            if origin and origin.is_relative_to(ROOT) and ".venv" not in origin.parts:
                yield origin


def digest() -> str:
    import django
    from django.apps import apps
    from django.conf import settings

    files: set[Path] = {Path(__file__).resolve()}
    for folder in _migrations_folders():
        for path in folder.rglob("*.py"):
            files.add(path)
            if path.resolve().is_relative_to(ROOT):
                files.update(_project_modules_imported_by(path))
    for app_config in apps.get_app_configs():
        models_file = getattr(app_config.models_module, "__file__", None)
        if models_file:
            files.add(Path(models_file))
    hasher = hashlib.sha256()
    for part in (
        django.__version__,
        sqlite3.sqlite_version,
        sys.version,
        repr(list(settings.INSTALLED_APPS)),
        str(settings.AUTH_USER_MODEL),
    ):
        hasher.update(part.encode() + b"\0")
    for path in sorted(p.resolve() for p in files):
        hasher.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    return hasher.hexdigest()[:20]


def template_path() -> Path:
    return FOLDER / f"sqlite-{digest()}.sqlite3"


_in_use: Path | None = None


def use(template: Path | None) -> None:
    """Says which template this process's test database started from (the
    session fixture does; None: none, e.g. on PostgreSQL)."""
    global _in_use
    _in_use = template


def in_use() -> Path | None:
    """The template this process's test database started from, once it exists
    (None on PostgreSQL, with `--nomigrations`, or before it is built)."""
    return _in_use if _in_use is not None and _in_use.exists() else None


def kept_path(template: Path, nodes: list[tuple[str, str | None]]) -> Path:
    """Where the template migrated back to `nodes` is kept (tests/harness/migrations.py):
    named after the template, so the same changes make both anew."""
    key = hashlib.sha256(repr(sorted(nodes, key=repr)).encode()).hexdigest()[:12]
    return template.with_name(f"{template.stem}-at-{key}.sqlite3")


def _test_database() -> sqlite3.Connection:
    """A connection of our own to the in-memory test database (the shared-cache
    URI Django's test database uses), which keeps it alive while open."""
    name = _test_db_name()
    assert name is not None, "only on SQLite"
    return sqlite3.connect(name, uri=True, check_same_thread=False)


def preload(template: Path) -> sqlite3.Connection | None:
    """Copies the template into the in-memory test database before it is
    migrated; returns the connection that keeps it alive until Django's own
    opens (close it after pytest-django's set-up), or None without a template."""
    if not template.exists():
        return None
    keeper = _test_database()
    source = sqlite3.connect(f"file:{template}?mode=ro", uri=True)
    try:
        source.backup(keeper)
    finally:
        source.close()
    return keeper


def save(template: Path) -> None:
    """Writes the in-memory test database (the migrated one, not yet touched by
    any test; or, next to it, one migrated back) to `template`, atomically,
    and removes the files of older templates."""
    FOLDER.mkdir(parents=True, exist_ok=True)
    partial = template.with_suffix(f".{os.getpid()}.partial")
    source = _test_database()
    target = sqlite3.connect(partial)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()
    os.replace(partial, template)
    current = template.stem.split("-at-")[0]
    for old in FOLDER.glob("sqlite-*.sqlite3"):
        if old.stem.split("-at-")[0] != current:
            old.unlink(missing_ok=True)


def restore(template: Path) -> bool:
    """Puts the in-memory test database back as the template has it (every
    table as migrated: content types and permissions, no other rows), in place
    of the flush after a transactional test (a DELETE of every table, then
    the post-migrate steps that make the content types and permissions
    again: about 45 ms of CPU a test against a few). False when SQLite says
    the database is busy: the caller flushes then."""
    from django.contrib.contenttypes.models import ContentType

    source = sqlite3.connect(f"file:{template}?mode=ro", uri=True)
    target = _test_database()
    try:
        source.backup(target)
    except sqlite3.OperationalError:
        return False
    finally:
        target.close()
        source.close()
    # The ids are the template's again: forget the ones read since.
    ContentType.objects.clear_cache()
    return True
