"""The outbox trigger (migration 0006) notifies only when its statement
inserted an event. It was a statement trigger that notified on every INSERT
statement into the outbox, rows or none, and since every move is one
statement whose outbox INSERT selects from its compare-and-set (lib.db
write_decided), a refused move (a replayed sync, say) inserted no row and
still notified. A transaction that has notified takes a transaction id and
a commit record, and at commit PostgreSQL's cluster-wide notification lock,
held until its commit is done (every notifying commit waits for the one
before): a read-only refusal queued with the writes (docs/benchmarks.md,
2026-11-26, "A refused move's notification"). Now it is a row trigger: it
fires for each row inserted, none for a statement that inserted none, with
the same function; identical notifications of one transaction are folded
into one by PostgreSQL, so the channel, the payload and the delivery at
commit are unchanged (a transition table with `IF EXISTS` did the same
with a query per statement)."""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION outbox_event_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('outbox_event', '');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
"""

# The function is 0006's, made again (the same text): the trigger changes.
WHEN_WRITTEN = (
    FUNCTION
    + """
DROP TRIGGER IF EXISTS outbox_event_notify ON commitments_outboxevent;
CREATE TRIGGER outbox_event_notify
    AFTER INSERT ON commitments_outboxevent
    FOR EACH ROW EXECUTE FUNCTION outbox_event_notify();
"""
)

# Migration 0006's trigger.
ALWAYS = (
    FUNCTION
    + """
DROP TRIGGER IF EXISTS outbox_event_notify ON commitments_outboxevent;
CREATE TRIGGER outbox_event_notify
    AFTER INSERT ON commitments_outboxevent
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_event_notify();
"""
)


def notify_when_written(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(WHEN_WRITTEN, params=None)


def notify_always(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(ALWAYS, params=None)


class Migration(migrations.Migration):
    dependencies = [("commitments", "0010_commitment_created_at_set_by_services")]

    operations = [migrations.RunPython(notify_when_written, notify_always)]
