"""For the outbox relay (relay/listener.py): each event keeps the id of the
request that made it, for the log lines of the work it causes; and on
PostgreSQL, a statement that writes outbox events also sends a
notification on the channel `outbox_event` (commitments.outbox.OUTBOX_CHANNEL).
PostgreSQL delivers it when the transaction commits, and not at all when it
rolls back, so the relay (relay/listener.py) wakes for exactly the committed
events and the request that wrote them does no work to announce them. The
payload is empty: the notification only says "look now"; the outbox rows are
the truth, and identical notifications of one transaction arrive as one."""

from django.db import migrations, models

CREATE = """
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

DROP = """
DROP TRIGGER IF EXISTS outbox_event_notify ON commitments_outboxevent;
DROP FUNCTION IF EXISTS outbox_event_notify();
"""


def create_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def drop_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("commitments", "0005_commitment_link_url")]

    operations = [
        migrations.AddField(
            model_name="outboxevent",
            name="request_id",
            field=models.CharField(blank=True, default="", max_length=128),
        ),
        migrations.RunPython(create_trigger, drop_trigger),
    ]
