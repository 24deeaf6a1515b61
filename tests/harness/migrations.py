"""Migration tests: the database as an older migration left it, its
historical models to write rows with, and the newest schema again after.

Migrating back is the dear part of a migration test: Django computes the
state before each migration it unapplies from the whole graph, rendering the
models again and again (seconds of CPU for a test that migrates back from the
newest schema). On SQLite in memory, started from the migrated template
(tests/harness/sqlite_template.py), the database migrated back to some nodes
is kept next to the template the first time, and copied in by every later
test and run that migrates back to the same nodes; the newest schema
afterwards is the template copied back. What the test then migrates forward
(or back) is what it is about, and runs as before. On PostgreSQL (CI), or
with rows written before migrating back, every step migrates.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.harness import sqlite_template

Node = tuple[str, str]
Target = tuple[str, str | None]  # None: the app's migrations all unapplied


def migrate(targets: list[Node] | list[Target]) -> None:
    from django.contrib.contenttypes.models import ContentType

    MigrationExecutor(connection).migrate(targets)
    ContentType.objects.clear_cache()  # a migration may have renamed or moved some


def latest() -> list[Node]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def migrate_back(targets: list[Node] | list[Target], *, keep_rows: bool = False) -> None:
    """The database as `migrate(targets)` from the newest schema leaves it. On
    SQLite in memory the kept copy of it replaces the database (made the first
    time from the template, migrated back): call it before writing rows, or
    say `keep_rows=True` to migrate back the rows written before."""
    template = sqlite_template.in_use()
    if template is None or keep_rows:
        migrate(targets)
        return
    kept = sqlite_template.kept_path(template, list(targets))
    if kept.exists() and sqlite_template.restore(kept):
        return
    if not sqlite_template.restore(template):
        migrate(targets)  # the database was busy: migrated back, not kept
        return
    migrate(targets)
    sqlite_template.save(kept)


def newest() -> None:
    """The newest schema again: nothing done where the test left it there (its
    rows stay); otherwise migrated forward, or, on SQLite in memory, the
    template copied back (its rows only: the test is over)."""
    executor = MigrationExecutor(connection)
    if not executor.migration_plan(executor.loader.graph.leaf_nodes()):
        return
    template = sqlite_template.in_use()
    if template is None or not sqlite_template.restore(template):
        migrate(latest())


@contextmanager
def schema_before(targets: list[Node], *, keep_rows: bool = False) -> Iterator[Apps]:
    """Migrates back to `targets` (one node per app the test is about;
    migrate_back) and yields the models as they were there, every other app
    at its newest; the newest schema again afterwards, whatever happens."""
    migrate_back(targets, keep_rows=keep_rows)
    try:
        loader = MigrationExecutor(connection).loader
        apps_moved = {app for app, _ in targets}
        others = [node for node in loader.graph.leaf_nodes() if node[0] not in apps_moved]
        yield loader.project_state([*others, *targets]).apps
    finally:
        newest()
