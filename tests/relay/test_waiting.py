"""Writers notify only a relay that waits (migration commitments 0012,
`commitments.outbox.outbox_relay_waits`, relay/listener.py), against the
real PostgreSQL: a waiting relay is woken by a commit, one that works is not
notified, several relays each count, a relay that died waiting stops
costing notifications when its wait is over, and a writer committing while
the relay goes to sleep leaves no event to the timed look (the advisory
lock, made deterministic with a second connection)."""

from __future__ import annotations

import threading

import psycopg
import pytest
from django.db import connection, transaction

from commitments.models import OutboxEvent
from commitments.outbox import (
    OUTBOX_CHANNEL,
    OUTBOX_WAIT_LOCK,
    OUTBOX_WAITERS,
    outbox_relay_gone,
    outbox_relay_waits,
    outbox_relay_works,
)
from tests.harness.concurrency import wait_for
from tests.harness.outbox import connect
from tests.harness.webhooks import mapped_pending

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def no_waiters(django_db_blocker):
    """The table has no model, so the flush between tests leaves it alone."""
    with django_db_blocker.unblock(), connect() as conn:
        conn.execute(f"DELETE FROM {OUTBOX_WAITERS}")
    yield


@pytest.fixture
def listener():
    conn = connect()
    conn.execute(f"LISTEN {OUTBOX_CHANNEL}")
    yield conn
    conn.close()


def heard(listener: psycopg.Connection, timeout: float = 0.3) -> int:
    return len(list(listener.notifies(timeout=timeout)))


def test_the_trigger_takes_the_relays_lock_at_commit():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_functiondef('outbox_event_notify'::regproc), t.tgdeferrable, "
            "t.tginitdeferred FROM pg_trigger t WHERE t.tgname = 'outbox_event_notify'"
        )
        source, deferrable, deferred = cursor.fetchone()
    assert f"pg_advisory_xact_lock_shared({OUTBOX_WAIT_LOCK})" in source
    assert deferrable and deferred


def test_writers_notify_only_while_a_relay_waits(listener, assigner, assignee):
    """Two relays (two workers) on connections of their own."""
    first, second = connect(), connect()
    try:
        mapped_pending(assigner, assignee, external_id="nobody")
        assert heard(listener) == 0  # no relay waits

        outbox_relay_waits(first, relay="first", seconds=60)
        mapped_pending(assigner, assignee, external_id="first-waits")
        assert heard(listener, timeout=2) == 1

        outbox_relay_waits(second, relay="second", seconds=60)
        outbox_relay_works(first, relay="first")  # woken, it works
        mapped_pending(assigner, assignee, external_id="second-waits")
        assert heard(listener, timeout=2) == 1  # the second still waits

        outbox_relay_works(second, relay="second")
        mapped_pending(assigner, assignee, external_id="both-work")
        assert heard(listener) == 0  # both busy: nobody notified

        # A relay that died waiting: its row outlives its wait (and the
        # margin) and no more.
        outbox_relay_waits(first, relay="first", seconds=-5)
        mapped_pending(assigner, assignee, external_id="dead")
        assert heard(listener) == 0

        # One that stops removes its row, and those of relays not waiting.
        outbox_relay_waits(second, relay="second", seconds=60)
        outbox_relay_gone(second, relay="second")
        assert first.execute(f"SELECT count(*) FROM {OUTBOX_WAITERS}").fetchone() == (0,)
        assert OutboxEvent.objects.count() == 5
    finally:
        first.close()
        second.close()


def test_a_waiting_relay_is_woken_by_a_commit_and_a_busy_one_is_not_notified(
    assigner, assignee, published, relay, settings, listener
):
    settings.OUTBOX_RELAY_WAIT = 60  # only a notification wakes it within the test
    thread = relay()
    assert wait_for(thread.waiting.is_set)
    event = OutboxEvent.objects.get(commitment=mapped_pending(assigner, assignee))
    assert wait_for(lambda: ("dispatch_event", str(event.pk)) in published)
    assert thread.relayed == 1
    assert thread.wakes == {"notified": 1}
    assert heard(listener, timeout=1) == 1  # the test's own listener heard the same
    # Back to waiting (its look found nothing more): notified again.
    assert wait_for(thread.waiting.is_set)
    assert wait_for(lambda: thread.wakes == {"notified": 1})

    # Its row says whether it waits; while it works it says not, and
    # writers notify nobody.
    with connect() as conn:
        row = conn.execute(f"SELECT until > clock_timestamp() FROM {OUTBOX_WAITERS}").fetchall()
        assert row == [(True,)]
        name = conn.execute(f"SELECT relay FROM {OUTBOX_WAITERS}").fetchone()[0]
        outbox_relay_works(conn, relay=name)  # as its wake-up does
    mapped_pending(assigner, assignee, external_id="unannounced")
    assert heard(listener) == 0


def hold_a_writer(assigner, assignee, *, immediate: bool):
    """A writer on a connection of its own (a thread: Django's connection is
    per thread) that writes an event and keeps its transaction open until
    told to commit. `immediate`: its trigger runs at the insert, as a writer
    does at its commit (it takes the lock shared and reads the rows there),
    so it stands for a writer caught between its read and the end of its
    commit."""
    written, commit = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            with transaction.atomic():
                if immediate:
                    with connection.cursor() as cursor:
                        cursor.execute("SET CONSTRAINTS outbox_event_notify IMMEDIATE")
                mapped_pending(assigner, assignee, external_id="in-flight")
                written.set()
                commit.wait(30)
        except BaseException as error:
            errors.append(error)
            written.set()
        finally:
            connection.close()

    thread = threading.Thread(target=write)
    thread.start()
    assert written.wait(30) and not errors
    return thread, commit, errors


def waiting_on_the_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
            "AND objid = %s",
            [OUTBOX_WAIT_LOCK & 0xFFFFFFFF],
        )
        return cursor.fetchone()[0] == 1


def test_a_writer_committing_while_the_relay_goes_to_sleep_is_found_by_its_last_look(
    assigner, assignee, published, relay, settings, listener
):
    settings.OUTBOX_RELAY_WAIT = 60
    writer, commit, errors = hold_a_writer(assigner, assignee, immediate=True)
    # The writer read "nobody waits" and holds the lock shared. The relay
    # looks (the event is not committed), says it waits: that waits for the
    # writer.
    thread = relay()
    assert wait_for(waiting_on_the_lock)
    assert thread.relayed == 0 and not thread.waiting.is_set()
    commit.set()
    writer.join(30)
    assert not errors
    event = OutboxEvent.objects.get()  # the only one
    assert wait_for(lambda: ("dispatch_event", str(event.pk)) in published)
    # Found by the look after saying it waits, not by a notification (the
    # writer sent none) nor by the timed look (60 s away).
    assert thread.wakes == {"found late": 1}
    assert heard(listener) == 0
    assert wait_for(thread.waiting.is_set)


def test_a_long_writer_does_not_hold_the_relay_and_notifies_at_its_commit(
    assigner, assignee, published, relay, settings
):
    """The trigger is deferred: a transaction that wrote an event and goes
    on holds no lock the relay waits for; at its commit it reads the
    relay's row and notifies."""
    settings.OUTBOX_RELAY_WAIT = 60
    writer, commit, errors = hold_a_writer(assigner, assignee, immediate=False)
    thread = relay()
    assert wait_for(thread.waiting.is_set)
    assert not waiting_on_the_lock()
    commit.set()
    writer.join(30)
    assert not errors
    event = OutboxEvent.objects.get()  # the only one
    assert wait_for(lambda: ("dispatch_event", str(event.pk)) in published)
    assert thread.wakes["notified"] == 1 and thread.wakes["timed"] == 0


def test_a_stopped_relay_leaves_no_row(relay, settings, published):
    settings.OUTBOX_RELAY_WAIT = 60
    thread = relay()
    assert wait_for(thread.waiting.is_set)
    thread.stop()
    assert thread.wakes == {"stopped": 1}
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {OUTBOX_WAITERS}")
        assert cursor.fetchone() == (0,)


@pytest.mark.redis
def test_a_relay_whose_dispatches_wait_in_the_broker_is_not_notified_and_queues_once_taken(
    assigner, assignee, relay, settings, listener
):
    """While dispatch messages wait in the broker (each tops its batch up with
    what is due when it runs: relay.outbox), the relay does not say it waits,
    so writers do not notify; it looks again shortly, and once the messages
    are taken it queues what is due, then waits as before."""
    import os

    import redis

    from relay.outbox import outbox_relay
    from tests.harness.services import purge_queue

    settings.OUTBOX_RELAY_WAIT = 60
    url = os.environ["REDIS_URL"]
    purge_queue(url)
    broker = redis.Redis.from_url(url)
    try:
        mapped_pending(assigner, assignee, external_id="first")
        assert outbox_relay() == 1 and broker.llen("celery") == 1
        thread = relay()
        assert wait_for(lambda: thread.wakes["broker busy"] >= 3)
        assert not thread.waiting.is_set() and thread.relayed == 0
        mapped_pending(assigner, assignee, external_id="while-busy")
        assert heard(listener) == 0  # nobody waits: not notified

        broker.delete("celery")  # a worker took the message
        # The relay's next look queues the event written meanwhile.
        assert wait_for(lambda: broker.llen("celery") == 1)
        assert thread.relayed == 1
        broker.delete("celery")
        assert wait_for(thread.waiting.is_set)  # nothing due: it waits, and is told
        mapped_pending(assigner, assignee, external_id="while-waiting")
        assert heard(listener, timeout=2) == 1
        assert wait_for(lambda: broker.llen("celery") == 1)
        assert thread.wakes["notified"] == 1
    finally:
        purge_queue(url)
        broker.close()
