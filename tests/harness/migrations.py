"""Migration tests: the database as an older migration left it, its
historical models to write rows with, and the newest schema again after."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

Node = tuple[str, str]


def migrate(targets: list[Node]) -> None:
    MigrationExecutor(connection).migrate(targets)


def latest() -> list[Node]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@contextmanager
def schema_before(targets: list[Node]) -> Iterator[Apps]:
    """Migrates back to `targets` (one node per app the test is about) and
    yields the models as they were there, every other app at its newest; the
    newest schema again afterwards, whatever happens."""
    migrate(targets)
    loader = MigrationExecutor(connection).loader
    apps_moved = {app for app, _ in targets}
    others = [node for node in loader.graph.leaf_nodes() if node[0] not in apps_moved]
    try:
        yield loader.project_state([*others, *targets]).apps
    finally:
        migrate(latest())
