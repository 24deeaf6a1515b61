"""How the Accord words a deadline: relative to now ("due in 2 days",
"3 days overdue"), the exact moment in the viewer's zone on hover."""

from __future__ import annotations

import datetime as dt

from django import template
from django.utils import timezone

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
    """ "due in 2 days", "due in 5 hours", "3 days overdue", "no deadline"."""
    if deadline is None:
        return "no deadline"
    now = now or timezone.now()
    if deadline >= now:
        return f"due in {_amount(deadline - now)}"
    return f"{_amount(now - deadline)} overdue"
