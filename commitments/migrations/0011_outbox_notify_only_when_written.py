"""The outbox trigger (migration 0006) notifies only when its statement
inserted an event. It was a statement trigger that notified on every INSERT
statement into the outbox, rows or none, and since every move is one
statement whose outbox INSERT selects from its compare-and-set (lib.db
write_decided), a refused move (a replayed sync, say) inserted no row and
still notified. A transaction that has notified takes a transaction id and
a commit record, and at commit PostgreSQL's cluster-wide notification lock,
held until its commit is done (every notifying commit waits for the one
before): a read-only refusal queued with the writes (docs/benchmarks.md,
2026-11-26, "A refused move's notification"). Now the trigger reads the
statement's inserted rows (a transition table) and notifies only if there
is one; the channel, the payload and the delivery at commit are unchanged."""

from django.db import migrations

WHEN_WRITTEN = """
CREATE OR REPLACE FUNCTION outbox_event_notify() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM inserted) THEN
        PERFORM pg_notify('outbox_event', '');
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS outbox_event_notify ON commitments_outboxevent;
CREATE TRIGGER outbox_event_notify
    AFTER INSERT ON commitments_outboxevent
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_event_notify();
"""

# Migration 0006's.
ALWAYS = """
DROP TRIGGER IF EXISTS outbox_event_notify ON commitments_outboxevent;
CREATE OR REPLACE FUNCTION outbox_event_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('outbox_event', '');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER outbox_event_notify
    AFTER INSERT ON commitments_outboxevent
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_event_notify();
"""


def notify_when_written(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(WHEN_WRITTEN, params=None)


def notify_always(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(ALWAYS, params=None)


class Migration(migrations.Migration):
    dependencies = [("commitments", "0010_commitment_created_at_set_by_services")]

    operations = [migrations.RunPython(notify_when_written, notify_always)]
