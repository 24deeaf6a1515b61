"""When a failed webhook delivery is tried again (docs/webhooks.md, "Delivery,
retries and failures"):
5 s, 5 min, 30 min, 2 h, 5 h, 10 h after the previous attempt (±10 %
jitter; WEBHOOK_RETRY_SCHEDULE), one last attempt 24 hours after the first
(WEBHOOK_RETRY_WINDOW), then failed for good (replayable)."""

from __future__ import annotations

import datetime as dt
import random

from django.conf import settings

JITTER = 0.10


def next_attempt_at(
    *,
    attempts: int,
    first_attempt_at: dt.datetime,
    now: dt.datetime,
    retry_after: float | None = None,
) -> dt.datetime | None:
    """When attempt `attempts + 1` is due after attempt `attempts` failed at
    `now`, or None when that was the last one (24 hours have passed since the
    first). A longer `Retry-After` (429, 503) is honoured when it still falls
    inside the 24 hours."""
    deadline = first_attempt_at + dt.timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW)
    if now >= deadline:
        return None
    index = attempts - 1
    gaps = settings.WEBHOOK_RETRY_SCHEDULE  # after attempts 1, 2, ...
    if 0 <= index < len(gaps):
        gap = gaps[index] * random.uniform(1 - JITTER, 1 + JITTER)  # noqa: S311
    else:
        gap = (deadline - now).total_seconds()  # the last attempt, at 24 hours
    if retry_after and retry_after > gap and now + dt.timedelta(seconds=retry_after) <= deadline:
        gap = retry_after
    return min(now + dt.timedelta(seconds=gap), deadline)
