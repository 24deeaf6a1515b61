"""A user's time zone, with one fallback.

Every place that shows or computes a time for a person (the pages, through
`accounts.middleware.UserTimezoneMiddleware`; a nudge's deadline; a token's
expiry day; the date a captured "Friday" means) reads the zone here, so the
rule is the same everywhere: the zone named on the user's profile, or UTC when
the name is empty or not one this system knows (a profile saved before a zone
was renamed, a row written by hand). The profile forms and the model validate
the name on the way in (`accounts.models.validate_timezone`); this is the
fallback for what got past them.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import Any

from django.utils import timezone

FALLBACK_ZONE = "UTC"


def zone_named(name: str | None) -> zoneinfo.ZoneInfo:
    """The time zone called `name` (an IANA key such as "Europe/Berlin"), or UTC
    when `name` is empty, not a string, or names no zone this system knows."""
    if isinstance(name, str) and name:
        try:
            return zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            pass
    return zoneinfo.ZoneInfo(FALLBACK_ZONE)


def user_zone(user: Any) -> zoneinfo.ZoneInfo:
    """The user's own time zone (UTC when theirs is empty or unknown)."""
    return zone_named(getattr(user, "timezone", None))


def user_now(user: Any, *, now: dt.datetime | None = None) -> dt.datetime:
    """Now (or `now`), on the user's own clock."""
    return (now or timezone.now()).astimezone(user_zone(user))
