"""The outbox trigger notifies only while a relay waits (issue 29: the
writes' commit cost). A transaction that notifies takes, at commit,
PostgreSQL's cluster-wide notification lock, held through its commit and
flush, so every notifying commit waits for the one before (the inbox's
statements: about a third of the throughput of the same without the
trigger, docs/benchmarks.md). A relay that is busy looking needs no
notification: it looks again as soon as it is done.

`commitments_outboxwaiter` holds a row per relay (relay/listener.py, each on
its listening connection): `until` is set while it waits (to the end of its
wait and a second) and NULL while it works. The trigger is a deferred
constraint trigger, so it runs at the writer's commit, and it notifies only
if some relay's `until` is still ahead: a relay that died while waiting
costs notifications for at most that wait, and one that died working
costs nothing (its events wait for the others' timed look or the sweep).

The race: a writer that read "nobody waits" and commits after the relay's
last look before it sleeps would leave its event to the timed look. The
trigger takes the advisory lock OUTBOX_WAIT_LOCK shared before it reads the
rows, and holds it to the end of its commit; the relay sets its row in a
transaction that takes the same lock exclusively
(`commitments.outbox.outbox_relay_waits`), so it commits only after every
writer that may have read the rows before has committed, and every writer
after reads its row (READ COMMITTED: the trigger's query takes its snapshot
after the lock). Then the relay looks once more and waits. The advisory lock
is held by writers only at their commit (the trigger is deferred), so the
relay never waits for a long transaction's body, and the writers never
share a row lock (no multixacts).

PostgreSQL only, like 0006 and 0011; SQLite has no notifications."""

from django.db import migrations

# commitments.outbox.OUTBOX_WAIT_LOCK (tests/relay/test_waiting.py checks they agree).
OUTBOX_WAIT_LOCK = 7_005_001_296

CREATE = f"""
CREATE TABLE commitments_outboxwaiter (
    relay varchar(64) PRIMARY KEY,
    until timestamptz NULL
);

CREATE OR REPLACE FUNCTION outbox_event_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared({OUTBOX_WAIT_LOCK});
    IF EXISTS (SELECT 1 FROM commitments_outboxwaiter WHERE until > clock_timestamp()) THEN
        PERFORM pg_notify('outbox_event', '');
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS outbox_event_notify ON commitments_outboxevent;
CREATE CONSTRAINT TRIGGER outbox_event_notify
    AFTER INSERT ON commitments_outboxevent
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION outbox_event_notify();
"""

# Migration 0011's trigger and function.
DROP = """
DROP TRIGGER IF EXISTS outbox_event_notify ON commitments_outboxevent;
CREATE OR REPLACE FUNCTION outbox_event_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('outbox_event', '');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER outbox_event_notify
    AFTER INSERT ON commitments_outboxevent
    FOR EACH ROW EXECUTE FUNCTION outbox_event_notify();
DROP TABLE IF EXISTS commitments_outboxwaiter;
"""


def notify_a_waiting_relay(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def notify_always(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("commitments", "0011_outbox_notify_only_when_written")]

    operations = [migrations.RunPython(notify_a_waiting_relay, notify_always)]
