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

import datetime as dt
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from django.conf import settings
from django.db import models, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from lib import jobs, leasing
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


def queue_on_commit(
    task: jobs.Task, rows: QuerySet[Any], ids: list[Any], *, retry: bool = True
) -> None:
    """Queue `task(id)` for each id once the transaction commits (at once
    outside one). A publish that fails clears the row's `enqueued_at`, so
    the next sweep queues it."""

    def enqueue() -> None:
        for row_id in ids:
            if not jobs.enqueue(task, str(row_id), retry=retry):
                rows.filter(pk=row_id).update(enqueued_at=None)

    if ids:
        transaction.on_commit(enqueue)


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
