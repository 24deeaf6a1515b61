"""The relay's loop (relay/listener.py), a thread as beat runs it, against the
real database: on PostgreSQL a committed transition wakes it through the
outbox trigger's NOTIFY (migrations commitments 0006 and 0012: sent while a
relay waits), long before its timed look; anywhere, the timed look finds
what was committed; a rolled-back transition notifies nobody."""

from __future__ import annotations

import time

import pytest
from django.db import connection, transaction

from commitments.models import OutboxEvent
from commitments.outbox import OUTBOX_CHANNEL
from tests.harness.concurrency import wait_for
from tests.harness.outbox import listening_as_a_relay
from tests.harness.webhooks import mapped_pending

pytestmark = pytest.mark.django_db(transaction=True)


def create_pending(assigner, assignee, external_id: str = "relay-1"):
    return mapped_pending(assigner, assignee, system="relay", external_id=external_id)


@pytest.mark.postgres
def test_the_outbox_trigger_notifies_on_commit_only(assigner, assignee):
    listener = listening_as_a_relay()
    try:
        try:
            with transaction.atomic():
                create_pending(assigner, assignee, external_id="rolled-back")
                raise RuntimeError("the caller gives up")
        except RuntimeError:
            pass
        assert list(listener.notifies(timeout=0.5)) == []

        with transaction.atomic():
            create_pending(assigner, assignee, external_id="first")
            create_pending(assigner, assignee, external_id="second")
            assert list(listener.notifies(timeout=0.3)) == []  # not before the commit
        notes = list(listener.notifies(timeout=2, stop_after=1))
        assert [(n.channel, n.payload) for n in notes] == [(OUTBOX_CHANNEL, "")]
        # One transaction, one wake-up (identical notifications are folded).
        assert list(listener.notifies(timeout=0.3)) == []
    finally:
        listener.close()


def listen_url() -> str:
    """The test database's URL, as DATABASE_LISTEN_URL would name PostgreSQL
    itself behind a pooler."""
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgresql://{db['USER']}{password}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.mark.postgres
@pytest.mark.parametrize("listen", ["DATABASE_URL", "DATABASE_LISTEN_URL"])
def test_a_committed_transition_wakes_the_relay_at_once(
    assigner, assignee, published, relay, settings, listen
):
    settings.OUTBOX_RELAY_WAIT = 60  # only a notification can wake it within the test
    settings.DATABASE_LISTEN_URL = listen_url() if listen == "DATABASE_LISTEN_URL" else ""
    thread = relay()
    time.sleep(0.3)  # its first look (nothing due) is done; it is waiting
    event = OutboxEvent.objects.get(commitment=create_pending(assigner, assignee))
    assert wait_for(lambda: ("dispatch_event", str(event.pk)) in published, timeout=10)
    assert thread.relayed == 1
    assert published == [("dispatch_event", str(event.pk))]


def test_without_a_notification_the_relay_looks_on_its_own(
    assigner, assignee, published, relay, settings
):
    settings.OUTBOX_RELAY_WAIT = 0.2
    thread = relay()
    # Written with no trigger to announce it (as on SQLite, or a lost notification).
    commitment = create_pending(assigner, assignee)
    event = OutboxEvent.objects.get(commitment=commitment)
    assert wait_for(lambda: ("dispatch_event", str(event.pk)) in published)
    assert thread.relayed >= 1


@pytest.mark.postgres
def test_the_relay_survives_losing_its_connection(assigner, assignee, published, relay, settings):
    settings.OUTBOX_RELAY_WAIT = 60
    relay()
    time.sleep(0.3)
    # PostgreSQL ends every other session of this database (a restart, as the
    # relay sees it): the relay reconnects and LISTENs again.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    time.sleep(2.5)  # past the relay's pause after a failure
    event = OutboxEvent.objects.get(commitment=create_pending(assigner, assignee))
    assert wait_for(lambda: ("dispatch_event", str(event.pk)) in published, timeout=10)
