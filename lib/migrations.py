"""Migration operations that know no app."""

from __future__ import annotations

from django.contrib.postgres.operations import AddIndexConcurrently as PostgresAddIndexConcurrently
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations import AddIndex
from django.db.migrations.state import ProjectState


class AddIndexConcurrently(PostgresAddIndexConcurrently):
    """An index added to a table that may already be large (the commitments,
    the audit trail): on PostgreSQL built with CREATE INDEX CONCURRENTLY, so
    writes go on while it is built (the migration must say `atomic = False`);
    on SQLite (development, the tests' default) a plain AddIndex, which
    Django's own operation refuses to be."""

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)
