"""The admin's audit search through indexes (found by benchmarks/scale.py at
five million rows): a person's events by their user id, and a token's by its
prefix (of the events by a token only: the others have none), each newest
first. Built concurrently on PostgreSQL, the trail taking its inserts
meanwhile (lib.migrations.AddIndexConcurrently; hence not atomic).

The single-column indexes they supersede (user_id; token_prefix, with its
LIKE twin on PostgreSQL) are dropped after them, concurrently too: each new
index leads with the same column, so every lookup they served (the users'
PROTECT check on delete among them) is served still, and each insert into
the trail keeps two indexes fewer up to date. Their names are Django's, the
same on SQLite and PostgreSQL."""

from django.conf import settings
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from lib.migrations import AddIndexConcurrently

TABLE = "audit_auditevent"
SUPERSEDED = {
    "audit_auditevent_user_id_871f21a9": "user_id",
    "audit_auditevent_token_prefix_ce3d6b93": "token_prefix",
}
# Made by PostgreSQL's schema editor beside an indexed CharField.
SUPERSEDED_LIKE = ("audit_auditevent_token_prefix_ce3d6b93_like", "token_prefix")


def _concurrently(schema_editor: BaseDatabaseSchemaEditor) -> str:
    return " CONCURRENTLY" if schema_editor.connection.vendor == "postgresql" else ""


def drop_superseded(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    how = _concurrently(schema_editor)
    names = [*SUPERSEDED]
    if schema_editor.connection.vendor == "postgresql":
        names.append(SUPERSEDED_LIKE[0])
    for name in names:
        schema_editor.execute(f'DROP INDEX{how} IF EXISTS "{name}"')


def restore_superseded(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    how = _concurrently(schema_editor)
    for name, column in SUPERSEDED.items():
        schema_editor.execute(f'CREATE INDEX{how} IF NOT EXISTS "{name}" ON "{TABLE}" ("{column}")')
    if schema_editor.connection.vendor == "postgresql":
        name, column = SUPERSEDED_LIKE
        schema_editor.execute(
            f'CREATE INDEX{how} IF NOT EXISTS "{name}" ON "{TABLE}" ("{column}" varchar_pattern_ops)'
        )


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("audit", "0006_scale_indexes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="auditevent",
            index=models.Index(fields=["user", "occurred_at", "id"], name="audit_user_time_idx"),
        ),
        AddIndexConcurrently(
            model_name="auditevent",
            index=models.Index(
                fields=["token_prefix", "occurred_at", "id"],
                name="audit_token_prefix_time_idx",
                condition=~models.Q(token_prefix=""),
            ),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="auditevent",
                    name="token_prefix",
                    field=models.CharField(blank=True, max_length=32),
                ),
                migrations.AlterField(
                    model_name="auditevent",
                    name="user",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        help_text="The acting user, or the token's owner for api_token events.",
                        null=True,
                        on_delete=models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            database_operations=[
                migrations.RunPython(drop_superseded, restore_superseded, elidable=False),
            ],
        ),
    ]
