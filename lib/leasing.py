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

from django.db import connections
from django.db.models import F, Q, QuerySet, Value
from django.db.models.functions import Coalesce

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


def claim_many(
    rows: QuerySet[Any],
    *,
    pks: list[Any],
    now: dt.datetime,
    lease: dt.timedelta,
    where: Q | None = None,
    first: str | None = None,
    skip_locked: bool = True,
) -> list[Any]:
    """Take for sending those of rows `pks` that are claimable and that no
    other worker is claiming this moment: `UPDATE ... WHERE id IN (SELECT
    ... FOR UPDATE SKIP LOCKED) RETURNING id`, one statement for the batch.
    Returns the ids taken. The same conditional update as `claim`, so a row
    is never taken twice; the lease must outlast the batch's sending (the
    caller releases what it has not sent in time). `where`: the condition
    instead of `claimable(now)`, for a caller that decides whose turn it is
    under its own lock (it must still exclude a live lease). `first`: a
    timestamp column set to `now` where it is NULL, in the same statement
    (a retry window's start). `skip_locked=False`: a row another
    transaction has locked is waited for and judged again as that left it,
    not passed over: for a caller whose turn lock already keeps other
    claimers out, so that a lock held by a brief write of another kind (a
    row left waiting for its turn) cannot make it take nothing and end a
    line that has rows waiting."""
    if not pks:
        return []
    condition = claimable(now) if where is None else where
    candidates = rows.filter(condition, pk__in=pks).select_for_update(skip_locked=skip_locked)
    if connections[rows.db].vendor != "postgresql":
        # SQLite: no FOR UPDATE (writes are serialized); the same update.
        taken = list(candidates.values_list("pk", flat=True))
        if taken:
            extra: dict[str, Any] = {}
            if first is not None:
                extra[first] = Coalesce(first, Value(now))
            rows.filter(condition, pk__in=taken).update(
                status=SENDING,
                claimed_until=now + lease,
                attempts=F("attempts") + 1,
                updated_at=now,
                **extra,
            )
        return taken
    model = rows.model
    pk_column = model._meta.pk.column
    inner_sql, inner_params = candidates.values("pk").query.sql_with_params()
    table = connections[rows.db].ops.quote_name(model._meta.db_table)
    quoted = {
        name: connections[rows.db].ops.quote_name(model._meta.get_field(name).column)
        for name in ("status", "claimed_until", "attempts", "updated_at")
    }
    # Names from the model (quoted), values as parameters, the inner SELECT
    # compiled by the ORM: nothing from outside is in the text.
    pk = connections[rows.db].ops.quote_name(pk_column)
    status, until, attempts, updated = (quoted[k] for k in quoted)
    params: list[Any] = [SENDING, now + lease, now]
    starts = ""
    if first is not None:
        column = connections[rows.db].ops.quote_name(model._meta.get_field(first).column)
        starts = f", {column} = COALESCE({column}, %s)"
        params.append(now)
    sql = (
        f"UPDATE {table} SET {status} = %s, {until} = %s, {attempts} = {attempts} + 1, "  # noqa: S608
        f"{updated} = %s{starts} WHERE {pk} IN ({inner_sql}) RETURNING {pk}"
    )
    with connections[rows.db].cursor() as cursor:
        cursor.execute(sql, [*params, *inner_params])
        return [row[0] for row in cursor.fetchall()]


def release(rows: QuerySet[Any], *, now: dt.datetime) -> int:
    """Rows a worker claimed and will not send after all (its batch ran out of
    time): pending and due now again, their claim not counted, stamped as
    queued (the caller queues them after commit)."""
    return rows.filter(status=SENDING).update(
        status=PENDING,
        attempts=F("attempts") - 1,
        next_attempt_at=now,
        claimed_until=None,
        enqueued_at=now,
        updated_at=now,
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
