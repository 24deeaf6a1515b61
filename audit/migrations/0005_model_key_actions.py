"""gather's five audit actions take the glossary's word: `provider_key_*`
becomes `model_key_*` in the enumeration and in every stored row, so the trail
has one word for one thing and a query by action finds old and new rows alike.

The trail is append-only (0002's trigger refuses UPDATE on PostgreSQL, and
the service's role may only SELECT and INSERT on the table). This migration is
the one place that rewrites rows, and only their action's word: the owner of
the table (the role that runs `migrate`) disables the trigger, renames the five
values one to one, and enables the trigger again, inside the migration's one
transaction; ALTER TABLE holds the table's exclusive lock until the commit, so
no other session writes, or sees the trigger off, meanwhile. Nothing else in a
row changes (who, when, the subject, the payload). Reversing renames back.
docs/architecture.md (The audit trail) says so.
"""

from django.db import migrations

RENAMED = {
    "provider_key_set": "model_key_set",
    "provider_key_replaced": "model_key_replaced",
    "provider_key_model_changed": "model_key_model_changed",
    "provider_key_made_default": "model_key_made_default",
    "provider_key_deleted": "model_key_deleted",
}
TRIGGER = "ALTER TABLE audit_auditevent {} TRIGGER audit_event_append_only"


def rename(schema_editor, names: dict[str, str]) -> None:
    postgres = schema_editor.connection.vendor == "postgresql"
    if postgres:
        schema_editor.execute(TRIGGER.format("DISABLE"), params=None)
    for old, new in names.items():
        schema_editor.execute(
            "UPDATE audit_auditevent SET action = %s WHERE action = %s", params=[new, old]
        )
    if postgres:
        schema_editor.execute(TRIGGER.format("ENABLE"), params=None)


def forwards(apps, schema_editor):
    rename(schema_editor, RENAMED)


def backwards(apps, schema_editor):
    rename(schema_editor, {new: old for old, new in RENAMED.items()})


class Migration(migrations.Migration):
    atomic = True  # the trigger is off only inside this transaction

    dependencies = [("audit", "0004_tracker_actor")]

    operations = [migrations.RunPython(forwards, backwards)]
