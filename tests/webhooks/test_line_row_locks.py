"""A line's claim waits for a row another transaction holds, and does not
pass it over (issue 29). A dispatch leaves a new delivery waiting for its
turn (`dispatch.leave_waiting`) in a write of its own, outside the person's
turn lock. Skipped (`FOR UPDATE SKIP LOCKED`) at that moment by the claim of
the batch whose send was in flight, the delivery was neither taken nor
queued: the line ended with it waiting, until the sweep, 36 s later in a
sustained run. Deterministic: the dispatch's write is held open on another
connection until the claim is seen waiting for its row lock (`pg_locks`)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from tests.harness.concurrency import wait_for
from tests.harness.webhook_pages import delivery_row
from webhooks import dispatch, sending
from webhooks.models import WebhookDelivery, WebhookDeliveryStatus

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def waiting_for_a_row_lock() -> bool:
    """Another session of this database waits for a transaction's lock (a
    row's: its locker's transaction id)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE NOT l.granted AND l.locktype = 'transactionid'"
            " AND a.datname = current_database()"
        )
        return cursor.fetchone()[0] > 0


def held_open(
    work, release: threading.Event, done: threading.Event, errors: list
) -> threading.Thread:
    """`work()` in a transaction of its own (its own connection), committed
    once `release` is set."""

    def run() -> None:
        try:
            with transaction.atomic():
                work()
                done.set()
                release.wait(20)
        except Exception as exc:  # reported by the test
            errors.append(exc)
            done.set()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def started(work, out: list, errors: list) -> threading.Thread:
    """`work()` in a thread of its own (its own connection), its result
    appended to `out`; started."""

    def run() -> None:
        try:
            out.append(work())
        except Exception as exc:  # reported by the test
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_row_being_left_waiting_is_waited_for_and_claimed_by_the_line_not_skipped(endpoint):
    owner_id = endpoint.user_id
    row = delivery_row(endpoint, None)  # never tried: waiting for its turn
    stamp = WebhookDelivery.objects.values_list("enqueued_at", flat=True).get(pk=row.pk)

    # The dispatch's write: it found the endpoint busy and leaves the row
    # waiting, its row lock held until it commits.
    release, left, errors = threading.Event(), threading.Event(), []
    dispatcher = held_open(
        lambda: dispatch.leave_waiting({row.pk: stamp}, now=timezone.now()), release, left, errors
    )
    assert left.wait(10) and not errors

    # The claim the batch whose send just ended makes for the person's line.
    taken: list = []

    def claiming() -> list:
        with transaction.atomic():
            return [c.row.pk for c in sending._claim_line(owner_id, timezone.now())]

    claimer = started(claiming, taken, errors)
    try:
        # It waits for the row instead of passing it over (and taking nothing).
        assert wait_for(waiting_for_a_row_lock), f"the claim did not wait: took {taken}"
        assert claimer.is_alive()
    finally:
        release.set()
        dispatcher.join(20)
        claimer.join(20)

    assert not errors
    assert taken == [[row.pk]]  # one claim, that took the row
    row.refresh_from_db()
    assert row.status == WebhookDeliveryStatus.SENDING
    assert row.first_attempt_at is not None


def test_leaving_rows_waiting_passes_over_a_row_another_transaction_holds_without_waiting(
    endpoint,
):
    """The other side: the dispatch's write never waits for a row lock, so
    it cannot close a cycle with the line's claim, which does. Waiting, it
    took its rows' locks in no set order while the claim took them in its
    own; in a sustained run the two deadlocked, PostgreSQL cancelled the
    claim, and the line waited 21 s for the sweep."""
    held = delivery_row(endpoint, None)
    free = delivery_row(endpoint, None)
    stamps = dict(
        WebhookDelivery.objects.filter(pk__in=[held.pk, free.pk]).values_list("pk", "enqueued_at")
    )

    # Another transaction holds one of the rows (a claim taking it).
    release, holding, errors = threading.Event(), threading.Event(), []
    holder = held_open(
        lambda: list(WebhookDelivery.objects.select_for_update().filter(pk=held.pk)),
        release,
        holding,
        errors,
    )
    assert holding.wait(10) and not errors

    left: list = []
    leaver = started(lambda: dispatch.leave_waiting(stamps, now=timezone.now()), left, errors)
    try:
        leaver.join(5)
        assert not leaver.is_alive(), "leave_waiting waited for the held row"
    finally:
        release.set()
        holder.join(20)
        leaver.join(20)

    assert not errors
    assert left == [1]
    rows = {row.pk: row for row in WebhookDelivery.objects.filter(pk__in=stamps)}
    assert rows[free.pk].enqueued_at is None  # left waiting
    assert rows[held.pk].enqueued_at == stamps[held.pk]  # passed over, as it was
