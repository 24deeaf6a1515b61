"""The outbox's processing state, for whoever turns events into work.

`commitments` writes an `OutboxEvent` with every transition; on PostgreSQL
the insert notifies OUTBOX_CHANNEL when its transaction commits, if a relay
waits (migration 0012: `outbox_relay_waits`, `outbox_relay_works`). These
functions let the relay say when it waits and find the events due, and the
dispatcher claim an event once and put it back after a failure. They know
nothing of what an event becomes.
"""

from __future__ import annotations

import datetime as dt

import psycopg
from django.db import connection
from django.db.models import F, Min, Q
from django.db.models.lookups import IsNull

from commitments.models import Invitation, OutboxEvent
from lib import leasing
from lib.db import Prepared, Unindexed

# The channel of the outbox trigger (migrations 0006, 0011, 0012): a
# notification with no payload, sent on commit by a transaction that wrote
# outbox events while a relay waits.
OUTBOX_CHANNEL = "outbox_event"
# The advisory lock of migration 0012's trigger (taken shared by each writer
# at its commit) and of `outbox_relay_waits` (exclusive).
OUTBOX_WAIT_LOCK = 7_005_001_296
OUTBOX_WAITERS = "commitments_outboxwaiter"  # migration 0012's table (no model)
# How long a waiting relay's row outlives the end of its wait: clocks and the
# time a wake-up takes; a relay that died waiting costs notifications this
# much longer.
WAIT_MARGIN = 1.0  # s
RETRY_BASE = 30  # seconds before a failed dispatch is tried again
RETRY_CAP = 2 * 3600
# While the queue of dispatches is busy, an event queued this many
# OUTBOX_REQUEUE_AFTER ago is queued again (its message may be lost).
REQUEUE_LOST_AFTER = 10


def outbox_relay_waits(pg: psycopg.Connection, *, relay: str, seconds: float) -> None:
    """Relay `relay` waits for a notification for up to `seconds` from now:
    its row in OUTBOX_WAITERS says so until then (and WAIT_MARGIN more), so
    writers' commits notify. `pg` is the relay's listening connection, in
    autocommit; one statement, in a transaction that takes OUTBOX_WAIT_LOCK
    exclusively: it waits for the writers committing now (each holds the
    lock shared from the trigger's read of the rows to the end of its commit),
    so when it returns every writer that read "nobody waits" has committed,
    and the look the relay makes next sees its event. PostgreSQL only."""
    pg.execute(
        f"WITH locked AS (SELECT pg_advisory_xact_lock({OUTBOX_WAIT_LOCK})) "  # noqa: S608
        f"INSERT INTO {OUTBOX_WAITERS} (relay, until) "
        "SELECT %s, clock_timestamp() + make_interval(secs => %s) FROM locked "
        "ON CONFLICT (relay) DO UPDATE SET until = EXCLUDED.until",
        [relay, seconds + WAIT_MARGIN],
    )


def _undispatched() -> Unindexed:
    """Not dispatched yet, for a lookup by ids or commitments: never through
    the index of the undispatched events (`outbox_undispatched_idx`, which
    is for the relay's look at what is due), whose size the statistics may
    not know (`lib.db.Unindexed`)."""
    return Unindexed(IsNull(F("dispatched_at"), True))


def outbox_relay_works(pg: psycopg.Connection, *, relay: str) -> None:
    """Relay `relay` is awake and looks: writers need not notify it (an
    UPDATE of its row, which stays: a HOT update, the table one page)."""
    pg.execute(f"UPDATE {OUTBOX_WAITERS} SET until = NULL WHERE relay = %s", [relay])  # noqa: S608


def outbox_relay_gone(pg: psycopg.Connection, *, relay: str) -> None:
    """Relay `relay` stops: its row goes, and with it those of relays that
    are not waiting now (gone, or working: a working relay makes its row
    again when it next waits)."""
    pg.execute(
        f"DELETE FROM {OUTBOX_WAITERS} "  # noqa: S608
        "WHERE relay = %s OR until IS NULL OR until < clock_timestamp()",
        [relay],
    )


def outbox_events_claim(*, event_ids: list[int], now: dt.datetime) -> list[OutboxEvent]:
    """Mark the events dispatched and return them with their commitment,
    both people and the invitation loaded, in the order of their ids; those
    already dispatched are left out. Two statements for a batch: one
    conditional UPDATE (of racing dispatchers, one wins each event) that
    returns the ids it marked, one SELECT. Call inside the transaction that
    does the dispatching, so a failure puts the events back."""
    if not event_ids:
        return []
    ops = connection.ops
    table = ops.quote_name(OutboxEvent._meta.db_table)
    # The model's own column names (these three are plain, not renamed).
    at, attempts, pk = (
        ops.quote_name(name) for name in ("dispatched_at", "dispatch_attempts", "id")
    )
    marks = ", ".join(["%s"] * len(event_ids))
    # Names from the model (quoted), values as parameters; the undispatched
    # check as `_undispatched` writes it (the ids' index, never the backlog's).
    sql = (
        f"UPDATE {table} SET {at} = %s, {attempts} = {attempts} + 1 "  # noqa: S608
        f"WHERE {pk} IN ({marks}) AND ({at} IS NULL) IS TRUE RETURNING {pk}"
    )
    with connection.cursor() as cursor:
        stamp = ops.adapt_datetimefield_value(now)
        cursor.execute(sql, [stamp, *(int(event_id) for event_id in event_ids)])
        claimed = [row[0] for row in cursor.fetchall()]
    if not claimed:
        return []
    return _claimed_events(claimed)


# The claimed events with what their dispatch reads of them, compiled once
# per batch size (lib.db.Prepared): built and compiled, this read cost more
# of the worker's CPU than its round trip (docs/benchmarks.md).
_claimed_events = Prepared(
    lambda ids: (
        OutboxEvent.objects.select_related(
            "commitment__assigner", "commitment__assignee", "commitment__invitation"
        )
        .filter(pk__in=ids)
        .order_by("pk")
    )
)


def outbox_event_undispatched_before(*, event_id: int, commitment_id) -> bool:
    """Whether an event of this commitment older than `event_id` still waits
    for its first dispatch: for whoever keeps what events cause in the order
    of the moves (the nudges to one person about one commitment). Ids follow
    the moves of one commitment (each move inserts its event in the statement
    whose UPDATE holds the commitment's row until it commits). An event whose
    dispatch has failed (`dispatch_attempts`) is not waited for: it may keep
    failing, and nothing else should wait on it."""
    return OutboxEvent.objects.filter(
        _undispatched(), commitment_id=commitment_id, dispatch_attempts=0, pk__lt=event_id
    ).exists()


def outbox_events_first_undispatched(*, commitment_ids: set[str]) -> dict[str, int]:
    """For each of these commitments, its first event still waiting for its
    first dispatch (`outbox_event_undispatched_before`'s rule: one whose
    dispatch has failed is not waited for), in one query."""
    return {
        str(commitment): first
        for commitment, first in OutboxEvent.objects.filter(
            _undispatched(), commitment_id__in=commitment_ids, dispatch_attempts=0
        )
        .values("commitment_id")
        .annotate(first=Min("id"))
        .values_list("commitment_id", "first")
    }


def outbox_event_retry_later(*, event_id: int, now: dt.datetime) -> None:
    """After a failed dispatch: count the attempt and leave the event for the
    sweep after a back-off (30 s doubling up to 2 h, with jitter)."""
    attempts = (
        OutboxEvent.objects.filter(pk=event_id).values_list("dispatch_attempts", flat=True).first()
        or 0
    ) + 1
    wait = leasing.backoff_seconds(attempts, base=RETRY_BASE, cap=RETRY_CAP)
    OutboxEvent.objects.filter(_undispatched(), pk=event_id).update(
        dispatch_attempts=attempts, next_attempt_at=now + dt.timedelta(seconds=wait)
    )


def outbox_events_due_again(*, event_ids: list[int], now: dt.datetime) -> None:
    """Events taken but not queued (the broker refused them): due at once
    again, for the relay's next look, as never queued (`next_attempt_at`
    back at the moment they were written: see `outbox_events_take_due`)."""
    OutboxEvent.objects.filter(_undispatched(), pk__in=event_ids).update(
        next_attempt_at=F("occurred_at")
    )


def outbox_events_take_due(
    *,
    now: dt.datetime,
    grace: dt.timedelta,
    requeue_after: dt.timedelta,
    limit: int,
    queue_busy: bool = False,
) -> list[tuple[int, str]]:
    """Undispatched events due for more than `grace`, not to be taken again
    before `requeue_after`: (id, request id) pairs, the request id being that
    of the request that made the change ("" if none). Events other sweeps or
    relays hold are skipped (SELECT ... FOR UPDATE SKIP LOCKED): call inside a
    transaction.

    With `queue_busy` (the broker's queue of dispatches is not empty, so a
    message queued for an event may still be waiting there, behind a
    backlog): only events never queued (`next_attempt_at` is still the
    moment they were written), those whose dispatch failed (their message
    was taken, and they are due after their back-off) and those queued more
    than REQUEUE_LOST_AFTER times `requeue_after` ago (a message the broker lost
    while it stayed busy). Queued again while their message waits, events
    made 1.6 to 2.7 dispatch messages each under a backlog; one is enough."""
    due = OutboxEvent.objects.select_for_update(skip_locked=True).filter(
        dispatched_at__isnull=True, next_attempt_at__lte=now - grace
    )
    if queue_busy:
        # Written with the event (its default, a moment after its stamp);
        # taken, it is at least `requeue_after` later.
        fresh = min(requeue_after / 2, dt.timedelta(seconds=1))
        due = due.filter(
            Q(next_attempt_at__lte=F("occurred_at") + fresh)
            | Q(dispatch_attempts__gt=0)
            | Q(next_attempt_at__lte=now - (REQUEUE_LOST_AFTER - 1) * requeue_after)
        )
    taken = list(due.order_by("next_attempt_at").values_list("id", "request_id")[:limit])
    if taken:
        OutboxEvent.objects.filter(
            _undispatched(), pk__in=[event_id for event_id, _ in taken]
        ).update(next_attempt_at=now + requeue_after)
    return taken


def invitation_lock(*, invitation_id) -> Invitation:
    """Lock an invitation's row (SELECT ... FOR UPDATE) for the rest of the
    caller's transaction: the dispatcher decides under it whether an
    address's invitation mail goes now, starts the day's digest or waits in
    it, so two workers cannot both mail the address at once; the claim
    (`services.commitment_invitations_claim`, FOR UPDATE) waits for it too.
    FOR NO KEY UPDATE, so an ask inserting a commitment that references the
    row (FOR KEY SHARE) does not wait for a dispatch."""
    return Invitation.objects.select_for_update(no_key=True).get(pk=invitation_id)
