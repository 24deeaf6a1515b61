"""The relay: outbox events become deliveries, and the sweep queues what is due.

The database is the truth; Celery only carries ids, and any message may be
lost, late or delivered twice:

1. A commitments service writes an `OutboxEvent` in the transaction of the
   change, and that is all the request does. On PostgreSQL the insert
   notifies `commitments.outbox.OUTBOX_CHANNEL` when the transaction commits
   while a relay waits (a trigger, migrations commitments 0006 and 0012); the
   relay (`relay/listener.py`, a thread of each worker on the default queue)
   looks again at once while it finds events, wakes on a notification when
   it waited, or every OUTBOX_RELAY_WAIT s without one (SQLite), and
   `outbox_relay` queues
   every event due, in batches: `relay.tasks.dispatch_events([...])` for up
   to DISPATCH_BATCH of them (`dispatch_event(id)` for one alone). A refused
   publish puts its events back for the next look.
2. `outbox_event_dispatch` claims the event (`commitments.outbox`) and asks
   each deliverer for its rows, in one transaction: the nudges
   (`notifications.dispatch`) and the integrators' webhooks
   (`webhooks.dispatch`). Each queues its own sends after commit; a batch's
   sends are queued together at its end, as batch tasks
   (`lib.deliveries.queued_together`).
3. `outbox_sweep` (beat, every OUTBOX_SWEEP_INTERVAL s) queues what is due
   and was never picked up: undispatched events, due nudges and webhook
   deliveries and those whose lease expired, claimed with SELECT ... FOR
   UPDATE SKIP LOCKED and stamped, so concurrent sweeps do not queue the same
   row; test nudges ("send a test") too, leased the same way. It also
   forgets rotated-out webhook secrets whose 24 hours are over.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from commitments.outbox import (
    outbox_event_retry_later,
    outbox_events_claim,
    outbox_events_due_again,
    outbox_events_take_due,
)
from lib import deliveries, jobs
from lib.logs import request_id_var
from notifications import tasks as notification_tasks
from notifications.dispatch import (
    nudge_deliveries_create_many,
    nudge_deliveries_take_due,
    nudges_publish,
)
from notifications.services import test_nudges_take_due
from relay import tasks
from webhooks.dispatch import (
    webhook_deliveries_create_many,
    webhook_deliveries_take_due,
    webhooks_publish,
)
from webhooks.services import webhook_endpoints_forget_old_secrets

log = logging.getLogger(__name__)

SWEEP_BATCH = 500
DISPATCH_BATCH = 20  # outbox events per dispatch task


def outbox_relay(*, now: dt.datetime | None = None, limit: int = SWEEP_BATCH) -> int:
    """Queue the dispatch of every outbox event that is due (committed, or its
    back-off over) and was not queued in the last OUTBOX_REQUEUE_AFTER s;
    the relay calls it each time it wakes. Returns how many were queued.
    Events go in batches of DISPATCH_BATCH (`dispatch_events`; one alone as
    `dispatch_event`). Each publish is tried once: when the broker refuses
    one, that batch and the rest are put back, due at once, for the next
    look (and the sweep).

    While dispatch messages wait in the broker (a backlog:
    `dispatches_waiting`) it queues nothing: each of those, when a worker
    runs it, tops its batch up with what is due then, up to DISPATCH_BATCH
    (`outbox_events_dispatch_due`), so a backlog is dispatched in batches
    as large as it allows, by about one task per DISPATCH_BATCH events,
    where queueing each look's one or two new events as a task of their own
    left it in the broker as many tiny tasks (issue 29: 2.6 events a task
    with 450 waiting). Once the queue is empty, the next look (at most
    OUTBOX_RELAY_WAIT s later) queues what is left."""
    if dispatches_waiting():
        # Those messages pull what is due when they run (`outbox_events_dispatch_due`).
        return 0
    return outbox_relay_due(now=now, limit=limit)


def outbox_relay_due(*, now: dt.datetime | None = None, limit: int = SWEEP_BATCH) -> int:
    """`outbox_relay` once the broker's dispatch queue is known to be empty
    (the relay's loop asks it first, `dispatches_waiting`, and pauses while
    it is not): queue what is due. Returns how many were queued."""
    now = now or timezone.now()
    due = _take_due(now=now, limit=limit)
    for start in range(0, len(due), DISPATCH_BATCH):
        if not _enqueue_events(due[start : start + DISPATCH_BATCH], retry=False):
            left = [event_id for event_id, _ in due[start:]]
            outbox_events_due_again(event_ids=left, now=now)
            return start
    return len(due)


def dispatches_waiting() -> bool:
    """Whether dispatch messages wait in the broker, not yet taken by a
    worker: then an event queued before may still have its message there,
    and is not queued again (`outbox_events_take_due`'s `queue_busy`). A
    broker that does not answer counts as idle (what is taken and cannot be
    queued is put back)."""
    return bool(jobs.waiting(tasks.dispatch_events))


def _enqueue_events(events: list[tuple[int, str]], *, retry: bool = True) -> bool:
    """One event as `dispatch_event`, under its request's id; several as one
    `dispatch_events`, which carries each one's request id with it."""
    if len(events) == 1:
        return _enqueue_event(*events[0], retry=retry)
    pairs = [[event_id, request_id or ""] for event_id, request_id in events]
    return jobs.enqueue(tasks.dispatch_events, pairs, retry=retry)


def _enqueue_event(event_id: int, request_id: str, *, retry: bool = True) -> bool:
    """Queue `dispatch_event(event_id)` under the id of the request that made
    the change, so the log lines of the work it causes carry it (lib.logs)."""
    token = request_id_var.set(request_id or None)
    try:
        return jobs.enqueue(tasks.dispatch_event, event_id, retry=retry)
    finally:
        request_id_var.reset(token)


def outbox_event_dispatch(*, event_id: int) -> list[uuid.UUID]:
    """Turn one outbox event into its deliveries, once (`outbox_events_dispatch`
    of it alone). Returns the ids of the deliveries queued (empty when
    another worker had already done it)."""
    now = timezone.now()
    try:
        with transaction.atomic():
            return _dispatch(event_ids=[event_id], now=now)
    except Exception:
        # Left undispatched; the sweep tries again after a back-off.
        outbox_event_retry_later(event_id=event_id, now=now)
        raise


def _dispatch(*, event_ids: list[int], now: dt.datetime) -> list[uuid.UUID]:
    """Claim the events (those another worker dispatched already are left
    out) and make what they call for, in the caller's transaction: a few
    statements for the whole batch (`notifications.dispatch`,
    `webhooks.dispatch`)."""
    events = outbox_events_claim(event_ids=event_ids, now=now)
    if not events:
        return []
    nudges = nudge_deliveries_create_many(events=events, now=now)
    return nudges + webhook_deliveries_create_many(events=events, now=now)


def outbox_events_dispatch_due(*, events: list[tuple[int, str]]) -> int:
    """What the dispatch tasks run: their events, topped up to
    DISPATCH_BATCH with the events due now that nobody queued or holds
    (`outbox_events_take_due`: SKIP LOCKED, stamped as queued, so a worker
    that dies after this leaves them to the sweep, as a lost message does),
    dispatched together (`outbox_events_dispatch`). One alone and nothing
    due with it is dispatched as `dispatch_event` always did (its failure
    raised to the task). Returns how many it dispatched."""
    events = _topped_up(events, now=timezone.now())
    if len(events) == 1:
        outbox_event_dispatch(event_id=events[0][0])
        return 1
    return outbox_events_dispatch(events=events)


def _take_due(*, now: dt.datetime, limit: int) -> list[tuple[int, str]]:
    """Up to `limit` events due now that nobody queued in the last
    OUTBOX_REQUEUE_AFTER s or holds, stamped as queued (its own transaction)."""
    with transaction.atomic():
        return outbox_events_take_due(
            now=now,
            grace=dt.timedelta(0),
            requeue_after=dt.timedelta(seconds=settings.OUTBOX_REQUEUE_AFTER),
            limit=limit,
        )


def _topped_up(events: list[tuple[int, str]], *, now: dt.datetime) -> list[tuple[int, str]]:
    room = DISPATCH_BATCH - len(events)
    if room <= 0:
        return events
    more = _take_due(now=now, limit=room)
    mine = {event_id for event_id, _ in events}
    return events + [
        (event_id, request_id or "") for event_id, request_id in more if event_id not in mine
    ]


def outbox_events_dispatch(*, events: list[tuple[int, str]]) -> int:
    """Dispatch a batch of events (`dispatch_events`) in one transaction, a
    few statements for the batch: each event still once (the claim), each
    delivery once per event and recipient (unique), in the order of the
    moves, under the cap and coalescing as one dispatch after another would
    decide. When the batch fails as a whole (an event that cannot be
    dispatched, a deadlock, a constraint), nothing of it is kept and each
    event is dispatched alone, under its request's id (`outbox_event_dispatch`):
    one that fails again is left for the sweep (after a back-off) and the
    rest go on. The sends they make are queued together at the end, in
    batches (`lib.deliveries.queued_together`). Returns how many it
    dispatched (or found dispatched already)."""
    event_ids = [event_id for event_id, _ in events]
    with deliveries.queued_together():
        if len(event_ids) > 1:
            try:
                with transaction.atomic():
                    _dispatch(event_ids=event_ids, now=timezone.now())
                return len(event_ids)
            except Exception:
                log.warning(
                    "Dispatching a batch of %d outbox events failed; each goes alone.",
                    len(event_ids),
                    exc_info=True,
                )
        dispatched = 0
        for event_id, request_id in events:
            token = request_id_var.set(request_id or None)
            try:
                outbox_event_dispatch(event_id=event_id)
                dispatched += 1
            except Exception:
                log.exception("Dispatching outbox event %s failed; the sweep retries it.", event_id)
            finally:
                request_id_var.reset(token)
    return dispatched


@dataclass(frozen=True)
class SweepResult:
    events: int
    deliveries: int
    webhooks: int = 0
    tests: int = 0


def outbox_sweep(*, now: dt.datetime | None = None) -> SweepResult:
    """Queue what is due and nobody is working on."""
    now = now or timezone.now()
    requeue_after = dt.timedelta(seconds=settings.OUTBOX_REQUEUE_AFTER)
    busy = dispatches_waiting()
    with transaction.atomic():
        events = outbox_events_take_due(
            now=now,
            grace=dt.timedelta(seconds=settings.OUTBOX_SWEEP_GRACE),
            requeue_after=requeue_after,
            limit=SWEEP_BATCH,
            queue_busy=busy,
        )
        delivery_ids = nudge_deliveries_take_due(
            now=now, requeue_after=requeue_after, limit=SWEEP_BATCH
        )
        webhook_ids = webhook_deliveries_take_due(
            now=now, requeue_after=requeue_after, limit=SWEEP_BATCH
        )
        test_ids = test_nudges_take_due(now=now, requeue_after=requeue_after, limit=SWEEP_BATCH)
        webhook_endpoints_forget_old_secrets(now=now)

        def enqueue() -> None:
            for start in range(0, len(events), DISPATCH_BATCH):
                _enqueue_events(events[start : start + DISPATCH_BATCH])
            nudges_publish(delivery_ids)
            webhooks_publish(webhook_ids)
            for test_id in test_ids:
                jobs.enqueue(notification_tasks.send_test_nudge, str(test_id))

        transaction.on_commit(enqueue)
    if events or delivery_ids or webhook_ids or test_ids:
        log.info(
            "Sweep queued %d event(s), %d delivery(ies), %d webhook delivery(ies) "
            "and %d test nudge(s).",
            len(events),
            len(delivery_ids),
            len(webhook_ids),
            len(test_ids),
        )
    return SweepResult(
        events=len(events),
        deliveries=len(delivery_ids),
        webhooks=len(webhook_ids),
        tests=len(test_ids),
    )
