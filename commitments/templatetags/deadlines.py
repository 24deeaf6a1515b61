"""Template filters about deadlines: how a page words one relative to now
(`due_phrase`, on the Accord) and whether accepting now makes a commitment
overdue at once (`accept_counts_as_overdue`, next to Accept)."""

from __future__ import annotations

import datetime as dt

from django import template
from django.utils import timezone

from commitments.models import Commitment, Status

register = template.Library()


def _amount(delta: dt.timedelta) -> str:
    seconds = int(delta.total_seconds())
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return "less than a minute"


@register.filter
def due_phrase(deadline: dt.datetime | None, now: dt.datetime | None = None) -> str:
    """ "due in 2 days", "due in 5 hours", "3 days overdue", "no deadline"; the
    page shows the exact moment, in the viewer's zone, on hover."""
    if deadline is None:
        return "no deadline"
    now = now or timezone.now()
    if deadline >= now:
        return f"due in {_amount(deadline - now)}"
    return f"{_amount(now - deadline)} overdue"


@register.filter
def accept_counts_as_overdue(commitment: Commitment) -> bool:
    """Whether accepting `commitment` now makes it overdue at once: it waits
    for the handshake and its deadline has passed (accepted, it would be
    Active past its deadline, `commitments.models.overdue`, and count so in
    the Flow Score). Pages show `commitments/_overdue_accept_warning.html`
    next to Accept; the accept action itself is unchanged."""
    return (
        commitment.status == Status.PENDING_HANDSHAKE
        and commitment.deadline is not None
        and commitment.deadline < timezone.now()
    )
