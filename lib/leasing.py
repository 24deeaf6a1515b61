"""Leases, claims and back-off for rows that background workers send.

A row that workers send (a nudge delivery, a webhook delivery, a channel
test: the columns are `lib.deliveries.LeasedRow`'s, and the protocol built on
these primitives is `lib.deliveries`) has `status`, `attempts`,
`next_attempt_at`, `claimed_until`, `enqueued_at` and `updated_at`.
`pending` rows are due at `next_attempt_at`; a worker claims one by a
conditional UPDATE to `sending` with a lease (`claimed_until`), so two
workers never take the same row; a lease that runs out means the worker died,
and the row may be claimed again. `enqueued_at` only keeps the sweep from
queueing the same row over and over.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from django.db.models import F, Q, QuerySet

PENDING = "pending"
SENDING = "sending"


def backoff_seconds(
    attempts: int, *, base: float, cap: float, retry_after: float | None = None
) -> float:
    """Wait before attempt `attempts + 1`: doubling from `base` up to `cap`,
    with jitter in [75%, 100%] so retries of many rows spread out and each
    wait is still longer than the one before (until the cap); a longer
    `retry_after` the other side asked for is honoured, up to `cap`."""
    delay: float = min(cap, base * 2 ** max(0, attempts - 1))
    delay *= random.uniform(0.75, 1.0)  # noqa: S311 (not cryptographic)
    if retry_after:
        delay = max(delay, min(retry_after, cap))
    return delay


def fresh_start(now: dt.datetime) -> dict[str, object]:
    """The fields that make a row pending and due now with a fresh count of
    attempts, marked as queued (the caller queues it after commit)."""
    return {
        "status": PENDING,
        "attempts": 0,
        "next_attempt_at": now,
        "claimed_until": None,
        "enqueued_at": now,
        "updated_at": now,
    }


def claimable(now: dt.datetime) -> Q:
    """Due and pending, or being sent by a worker whose lease ran out."""
    return Q(status=PENDING, next_attempt_at__lte=now) | Q(status=SENDING, claimed_until__lt=now)


def claim(
    rows: QuerySet[Any], *, pk: object, now: dt.datetime, lease: dt.timedelta, **fields: object
) -> bool:
    """Take row `pk` for sending, if it is claimable: one conditional UPDATE
    (of `fields` too). The lease must outlast the task's hard time limit, so
    that it expires only when its worker is really gone."""
    return bool(
        rows.filter(claimable(now), pk=pk).update(
            status=SENDING,
            claimed_until=now + lease,
            attempts=F("attempts") + 1,
            updated_at=now,
            **fields,
        )
    )


def take_due(
    rows: QuerySet[Any], *, now: dt.datetime, requeue_after: dt.timedelta, limit: int
) -> list[Any]:
    """Ids of up to `limit` claimable rows that were not queued in the last
    `requeue_after`, stamped as queued now. Rows other sweeps hold are
    skipped (SELECT ... FOR UPDATE SKIP LOCKED): call inside a transaction."""
    not_just_queued = Q(enqueued_at__isnull=True) | Q(enqueued_at__lte=now - requeue_after)
    ids = list(
        rows.select_for_update(skip_locked=True)
        .filter(claimable(now) & not_just_queued)
        .order_by("next_attempt_at")
        .values_list("id", flat=True)[:limit]
    )
    if ids:
        rows.filter(pk__in=ids).update(enqueued_at=now)
    return ids
