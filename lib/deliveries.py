"""The leased-send protocol: one algorithm for every row a worker sends (a
nudge delivery, a webhook delivery, a test nudge). docs/delivery.md says
why; each app keeps only its policy (what is sent, where, when to give up).

1. A row is made in the transaction that decides it, stamped `enqueued_at`,
   and its task queued once that commits (`queue_on_commit`); a publish that
   fails clears the stamp, and the sweep (`take_due`) queues it.
2. A worker claims it with a conditional UPDATE and a lease (`claim`); in the
   same transaction an attempt its previous worker left open is marked
   interrupted and the new one is written before the send (`attempt_begin`).
3. The send happens outside any transaction, and its outcome is recorded at
   once (`attempt_end`): success unfenced (`record_delivered`: whoever holds
   the row now, the message went out), failure fenced by the attempt count
   (`fenced`, `retry_later`, `fail`: a row another worker claimed since is
   theirs to schedule).
4. Staff or owners send it again from a fresh count (`restart`).

Abstract models carry the columns, so each table declares them once here;
they import no app (`lib` stays below every app).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from django.conf import settings
from django.db import models, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from lib import db, jobs, leasing
from lib.leasing import PENDING, SENDING

if TYPE_CHECKING:
    from django.db.models.fields.related_descriptors import RelatedManager

DELIVERED = "delivered"
FAILED = "failed"


class AttemptOutcome(models.TextChoices):
    """How one attempt ended (nudges retry `transient` and give up on
    `permanent`; a webhook attempt is `delivered` or `failed`)."""

    DELIVERED = DELIVERED, "Delivered"
    TRANSIENT = "transient", "Failed, will retry"
    PERMANENT = "permanent", "Failed for good"
    FAILED = FAILED, "Failed"
    INTERRUPTED = "interrupted", "Interrupted (worker lost)"
    CANCELLED = "cancelled", "Not sent: the reminder was no longer due"


class LeasedRow(models.Model):
    """The lease columns (lib.leasing). Subclasses add `status` (with
    `pending` and `sending` among its choices) and `updated_at`, and declare
    `lease_indexes(...)` in their Meta."""

    attempts = models.PositiveIntegerField(default=0)  # claims since made or restarted
    next_attempt_at = models.DateTimeField(default=timezone.now)
    claimed_until = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class LeasedDelivery(LeasedRow):
    """A delivery: a leased row with an outcome and an `attempt_log` (a
    subclass of `Attempt` with `related_name="attempt_log"`)."""

    delivered_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=1000, blank=True)

    if TYPE_CHECKING:
        # Made by each subclass's Attempt (its foreign key's related_name).
        attempt_log: RelatedManager[Attempt]

    class Meta:
        abstract = True


def lease_indexes(prefix: str) -> list[models.Index]:
    """The two partial indexes the claims and the sweep use: due pending
    rows, and leases of rows being sent."""
    return [
        models.Index(
            fields=["next_attempt_at"],
            condition=Q(status=PENDING),
            name=f"{prefix}_pending_due_idx",
        ),
        models.Index(
            fields=["claimed_until"],
            condition=Q(status=SENDING),
            name=f"{prefix}_sending_lease_idx",
        ),
    ]


class Attempt(models.Model):
    """One try at sending a delivery. Written when the send starts; its
    outcome is filled in when it ends, or marked interrupted by the next
    claimer when the worker died in between. Subclasses add the `delivery`
    foreign key (`related_name="attempt_log"`)."""

    started_at = models.DateTimeField(default=timezone.now)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=AttemptOutcome.choices, blank=True)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=1000, blank=True)

    class Meta:
        abstract = True
        ordering = ["started_at", "id"]


# Ids per batch task (`deliver_nudges`, `deliver_webhooks`): one message,
# one task, one mail connection for up to this many sends, each still claimed
# and recorded on its own.
SEND_BATCH = 20

# Seconds at most that `queued_together` holds a send back.
TOGETHER_AT_MOST = 0.25

_together = threading.local()


def queue_on_commit(
    task: jobs.Task,
    rows: QuerySet[Any],
    ids: list[Any],
    *,
    retry: bool = True,
    batch_task: jobs.Task | None = None,
) -> None:
    """Queue `task(id)` for each id once the transaction commits (at once
    outside one); with `batch_task`, several ids go as `batch_task([ids])`,
    SEND_BATCH at most each. Inside `queued_together()` the ids wait for its
    end and go with the others queued there. A publish that fails clears
    the rows' `enqueued_at`, so the next sweep queues them."""

    def enqueue() -> None:
        waiting = getattr(_together, "groups", None)
        if waiting is not None and batch_task is not None:
            waiting.setdefault(task.name, (task, batch_task, rows, retry, []))[4].extend(ids)
            _publish_together(full_only=True)
            return
        publish(task, rows, ids, retry=retry, batch_task=batch_task)

    if ids:
        transaction.on_commit(enqueue)


def publish(
    task: jobs.Task,
    rows: QuerySet[Any],
    ids: list[Any],
    *,
    retry: bool = True,
    batch_task: jobs.Task | None = None,
) -> None:
    """Queue the ids now: one by one with `task`, or in batches of
    SEND_BATCH with `batch_task` (a single id still goes with `task`)."""
    if batch_task is None or len(ids) == 1:
        for row_id in ids:
            if not jobs.enqueue(task, str(row_id), retry=retry):
                rows.filter(pk=row_id).update(enqueued_at=None)
        return
    for start in range(0, len(ids), SEND_BATCH):
        chunk = [str(row_id) for row_id in ids[start : start + SEND_BATCH]]
        if len(chunk) == 1:
            publish(task, rows, chunk, retry=retry)
        elif not jobs.enqueue(batch_task, chunk, retry=retry):
            rows.filter(pk__in=chunk).update(enqueued_at=None)


@contextlib.contextmanager
def queued_together() -> Iterator[None]:
    """What `queue_on_commit` queues (with a batch task) while inside is
    published at the end, in batches: a worker dispatching many outbox
    events queues their sends as a few batch tasks, not one task each. The
    rows are stamped as queued when made, so a process that dies before the
    end loses only publishes, which the sweep makes up (as for any lost
    publish)."""
    if getattr(_together, "groups", None) is not None:  # already collecting
        yield
        return
    _together.groups, _together.since = {}, time.monotonic()
    try:
        yield
    finally:
        _publish_together(full_only=False)
        _together.groups = None


def _publish_together(*, full_only: bool) -> None:
    """Publish what `queued_together` collected: with `full_only`, only once
    a batch is full or the oldest has waited TOGETHER_AT_MOST seconds (so a
    long batch of dispatches does not hold its first sends back)."""
    groups = _together.groups
    if not groups:
        return
    waited = time.monotonic() - _together.since
    if (
        full_only
        and waited < TOGETHER_AT_MOST
        and all(len(group[4]) < SEND_BATCH for group in groups.values())
    ):
        return
    _together.groups, _together.since = {}, time.monotonic()
    for task, batch_task, rows, retry, ids in groups.values():
        publish(task, rows, ids, retry=retry, batch_task=batch_task)


def take_due(
    rows: QuerySet[Any], *, now: dt.datetime, requeue_after: dt.timedelta, limit: int
) -> list[Any]:
    """For the sweep: ids of due rows nobody is working on (due retries,
    expired leases, lost publishes), stamped as queued. Call inside the
    sweep's transaction."""
    return leasing.take_due(rows, now=now, requeue_after=requeue_after, limit=limit)


def claim(rows: QuerySet[Any], *, pk: object, now: dt.datetime, **fields: object) -> bool:
    """Take row `pk` for sending with a lease of DELIVERY_LEASE_SECONDS
    (longer than the task's hard time limit), updating `fields` with it."""
    lease = dt.timedelta(seconds=settings.DELIVERY_LEASE_SECONDS)
    return leasing.claim(rows, pk=pk, now=now, lease=lease, **fields)


def close_interrupted(row: LeasedDelivery, consequence: str) -> None:
    """After `claim`, in its transaction: an attempt without an outcome
    belonged to a worker that died mid-send."""
    row.attempt_log.filter(outcome="").update(
        outcome=AttemptOutcome.INTERRUPTED,
        error=f"The worker stopped before recording the outcome; {consequence}",
    )


def attempt_begin(row: LeasedDelivery, *, interrupted: str, **fields: object) -> Attempt:
    """After `claim`, in its transaction: close the attempt a dead worker
    left open (`close_interrupted`), and write this one before the send."""
    close_interrupted(row, interrupted)
    return row.attempt_log.create(**fields)


def claim_many(
    rows: QuerySet[Any],
    *,
    pks: list[Any],
    now: dt.datetime,
    where: Q | None = None,
    first: str | None = None,
    skip_locked: bool = True,
) -> list[Any]:
    """`claim` for a batch, in one statement (lib.leasing.claim_many, whose
    `where`, `first` and `skip_locked` these are): the ids taken. Send them
    within `batch_window()` of now, and `release` the ones left when it is
    over."""
    lease = dt.timedelta(seconds=settings.DELIVERY_LEASE_SECONDS)
    return leasing.claim_many(
        rows, pks=pks, now=now, lease=lease, where=where, first=first, skip_locked=skip_locked
    )


def batch_window() -> float:
    """Seconds from a batch's claim during which its sends may start: a
    third of the lease, so that a send that starts at its end (bounded by its
    own timeouts, far shorter) still ends before the lease does."""
    return settings.DELIVERY_LEASE_SECONDS / 3


def close_interrupted_many(rows: Sequence[LeasedDelivery], consequence: str) -> None:
    """`close_interrupted` for a batch just claimed, in one statement."""
    if rows:
        model: Any = rows[0].attempt_log.model
        model._default_manager.filter(delivery__in=[row.pk for row in rows], outcome="").update(
            outcome=AttemptOutcome.INTERRUPTED,
            error=f"The worker stopped before recording the outcome; {consequence}",
        )


def attempts_begin(
    rows: Sequence[LeasedDelivery], *, interrupted: str, fields: list[dict[str, object]]
) -> list[Attempt]:
    """`attempt_begin` for a batch just claimed: the attempts dead workers
    left open closed in one statement, this batch's written in one."""
    if not rows:
        return []
    close_interrupted_many(rows, interrupted)
    # The concrete Attempt model (its `delivery` key is the subclass's).
    model: Any = rows[0].attempt_log.model
    made: list[Attempt] = model._default_manager.bulk_create(
        [model(delivery=row, **extra) for row, extra in zip(rows, fields, strict=True)]
    )
    return made


def release(claims: list[Claim[LeasedDelivery]], *, now: dt.datetime) -> list[Any]:
    """Claims of a batch that will not be sent after all (its window is
    over): their attempts forgotten (none was made), the rows pending and
    due now, stamped as queued: queue the ids after commit."""
    if not claims:
        return []
    model = type(claims[0].row)
    attempt_model = claims[0].row.attempt_log.model
    attempt_model._default_manager.filter(
        pk__in=[c.attempt_id for c in claims if c.attempt_id is not None]
    ).delete()
    ids = [c.row.pk for c in claims]
    leasing.release(model._default_manager.filter(pk__in=ids), now=now)
    return ids


_Row = TypeVar("_Row", bound=LeasedDelivery, covariant=True)


@dataclass(frozen=True)
class Claim(Generic[_Row]):
    """A claimed row (loaded after the claim) and its attempt."""

    row: _Row
    attempt_id: int | None
    started: float = field(default_factory=time.monotonic)

    @property
    def fence(self) -> int:
        """`attempts` after the claim: a later claimer changes it, which
        fences this worker's failure out."""
        return self.row.attempts

    @property
    def rows(self) -> QuerySet[Any]:
        # The concrete model's manager (an abstract model has no `objects`);
        # Any: its `status` is the subclass's.
        return type(self.row)._default_manager.filter(pk=self.row.pk)


def attempt_end(claim: Claim[LeasedDelivery], outcome: str, **fields: object) -> None:
    claim.row.attempt_log.filter(pk=claim.attempt_id).update(
        outcome=outcome, duration_ms=int((time.monotonic() - claim.started) * 1000), **fields
    )


def record_delivered(claim: Claim[LeasedDelivery], *, now: dt.datetime, **fields: object) -> None:
    """Not fenced: whoever holds the row now, the message did go out."""
    claim.rows.exclude(status=DELIVERED).update(
        status=DELIVERED, delivered_at=now, claimed_until=None, updated_at=now, **fields
    )


def record_delivered_ended(
    claim: Claim[LeasedDelivery],
    *,
    now: dt.datetime,
    attempt: dict[str, object],
    begin: LeasedDelivery | None = None,
    **fields: object,
) -> int | None:
    """`attempt_end` (delivered, with `attempt`'s fields) and
    `record_delivered` (with `fields`) in one statement, where a send's
    outcome took BEGIN, two UPDATEs and COMMIT. With `begin` (the next row a
    batch sends, claimed with this one), its attempt is written in the same
    statement: returns that attempt's id.

    A `lib.db.write_decided` of a `Later` (`_delivered`): on PostgreSQL one
    `WITH ... UPDATE/INSERT`, which needs no transaction of its own, whose
    querysets are built and compiled once per shape, not once a send (they
    cost more of the worker's CPU than the statement's round trip, issue 29).
    The compare-and-set is the attempt's own row, which this worker wrote
    and nobody else deletes: the row's outcome and the next attempt follow
    it. It refuses only when another claimer closed the attempt in the same
    instant (its lease ran out; the row is that claimer's to send again)."""
    duration = int((time.monotonic() - claim.started) * 1000)
    started: Any = None
    if begin is not None:
        model: Any = begin.attempt_log.model  # the concrete Attempt
        started = model(delivery=begin, started_at=now)
    ended = {"outcome": DELIVERED, "duration_ms": duration, **attempt}
    delivered = {
        "status": DELIVERED,
        "delivered_at": now,
        "claimed_until": None,
        "updated_at": now,
        **fields,
    }
    db.write_decided(
        _delivered(claim, ended, delivered), inserts=[started] if started is not None else []
    )
    return started.pk if started is not None else None


def _delivered(
    claim: Claim[LeasedDelivery], ended: dict[str, object], delivered: dict[str, object]
) -> db.Later:
    """`record_delivered_ended`'s writes as a `lib.db.Later`: the attempt's
    update (the decide) and the row's (unless already delivered). Its inputs
    are the keys and every value but None (a NULL is in the statement's text:
    its shape); a choice's value is its plain string."""
    row_model: Any = type(claim.row)  # the concrete model: its `status` is the subclass's
    attempt_model: Any = claim.row.attempt_log.model
    ended = {name: _plain(value) for name, value in ended.items()}
    delivered = {name: _plain(value) for name, value in delivered.items()}
    ended_nulls = tuple(value is None for value in ended.values())
    delivered_nulls = tuple(value is None for value in delivered.values())
    inputs = (
        claim.attempt_id,
        *(value for value in ended.values() if value is not None),
        claim.row.pk,
        DELIVERED,
        *(value for value in delivered.values() if value is not None),
    )
    key = (
        "lib.deliveries.delivered",
        row_model._meta.label,
        tuple(ended),
        ended_nulls,
        tuple(delivered),
        delivered_nulls,
    )

    def build(*values: Any) -> tuple[db.Decide, list[tuple[QuerySet[Any], dict[str, Any]]]]:
        at = iter(values)
        attempt_pk = next(at)
        ends = {n: None if null else next(at) for n, null in zip(ended, ended_nulls, strict=True)}
        row_pk, done = next(at), next(at)
        sets = {
            n: None if null else next(at)
            for n, null in zip(delivered, delivered_nulls, strict=True)
        }
        decide = db.Decide(attempt_model._default_manager.filter(pk=attempt_pk), ends)
        row = row_model._default_manager.filter(pk=row_pk).exclude(status=done)
        return decide, [(row, sets)]

    return db.Later(key, inputs, build)


def _plain(value: object) -> object:
    """A choice (a str enum) as its plain string, as Django writes it."""
    return value.value if isinstance(value, models.Choices) else value


def fenced(claim: Claim[LeasedDelivery]) -> QuerySet[Any]:
    """The row, if it is still this claim's (being sent, not claimed since)."""
    return claim.rows.filter(status=SENDING, attempts=claim.fence)


def retry_later(
    claim: Claim[LeasedDelivery], *, due: dt.datetime, now: dt.datetime, **fields: object
) -> int:
    """Pending again at `due`; the sweep queues it then."""
    return fenced(claim).update(
        status=PENDING,
        next_attempt_at=due,
        claimed_until=None,
        enqueued_at=None,
        updated_at=now,
        **fields,
    )


def fail(claim: Claim[LeasedDelivery], *, now: dt.datetime, **fields: object) -> int:
    return fenced(claim).update(status=FAILED, claimed_until=None, updated_at=now, **fields)


def restart(rows: QuerySet[Any], *, now: dt.datetime, **fields: object) -> int:
    """Pending and due now with a fresh count of attempts, stamped as
    queued: queue the ids after commit (`queue_on_commit`)."""
    return rows.update(**leasing.fresh_start(now), **fields)
