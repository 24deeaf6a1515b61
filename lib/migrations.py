"""Migration operations that know no app."""

from __future__ import annotations

from django.contrib.postgres.operations import AddIndexConcurrently as PostgresAddIndexConcurrently
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations import AddIndex
from django.db.migrations.operations.base import Operation
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


class DropIndexesConcurrently(Operation):
    """Indexes dropped that other indexes already serve (a foreign key's, or a
    `db_index` field's, where a composite index leads with the column): on
    PostgreSQL with DROP INDEX CONCURRENTLY, so the table's writes go on (the
    migration must say `atomic = False`), and without the table rebuild and
    foreign-key revalidation that AlterField(db_index=False) costs. Pair it
    with the fields' AlterField in a SeparateDatabaseAndState's state.

    `indexes`: each index's name and its columns as CREATE INDEX writes them,
    for the way back; those with an operator class of PostgreSQL's
    (`varchar_pattern_ops`) exist there only."""

    reversible = True

    def __init__(self, table: str, indexes: dict[str, str]) -> None:
        self.table = table
        self.indexes = indexes

    def deconstruct(self) -> tuple[str, list[object], dict[str, object]]:
        return self.__class__.__qualname__, [], {"table": self.table, "indexes": self.indexes}

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        pass

    def _here(self, schema_editor: BaseDatabaseSchemaEditor) -> tuple[str, list[tuple[str, str]]]:
        """How the statements say it ("CONCURRENTLY " or nothing), and the
        indexes this database has."""
        postgresql = schema_editor.connection.vendor == "postgresql"
        return "CONCURRENTLY " if postgresql else "", [
            (name, columns)
            for name, columns in self.indexes.items()
            if postgresql or "_pattern_ops" not in columns
        ]

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        how, indexes = self._here(schema_editor)
        for name, _columns in indexes:
            schema_editor.execute(f"DROP INDEX {how}IF EXISTS {schema_editor.quote_name(name)}")

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        how, indexes = self._here(schema_editor)
        table = schema_editor.quote_name(self.table)
        for name, columns in indexes:
            schema_editor.execute(
                f"CREATE INDEX {how}IF NOT EXISTS {schema_editor.quote_name(name)}"
                f" ON {table} {columns}"
            )

    def describe(self) -> str:
        return f"Drop indexes {', '.join(self.indexes)} (concurrently on PostgreSQL)"

    @property
    def migration_name_fragment(self) -> str:
        return f"drop_{self.table}_indexes"
