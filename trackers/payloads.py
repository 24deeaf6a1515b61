"""What a tracker's delivery says, read into one shape (`Change`), whatever
the tracker, and the small readers of JSON values every tracker's reader uses.
Pure: no database. Each tracker's own reading is its class's `read`
(`trackers.kinds`).

Who is who: each tracker's person is matched to the identity map by one field
the tracker keeps unique and the person cannot set to someone else's (its
class's `identity_field`); display names are only shown. Links are read as
sent; the connection checks them (`trackers.services`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

ASSIGNED = "assigned"
CLOSED = "closed"
# Closed without being done: not planned, canceled, a duplicate, won't do.
NOT_DONE = "not_done"
REOPENED = "reopened"
UNASSIGNED = "unassigned"
OTHER = "other"

URL_MAX = 500


@dataclass(frozen=True)
class Person:
    """An assignee as the tracker names them: `key`, the one field the identity
    map is matched against (the tracker's `identity_field`); `name`, how to
    show them (never matched); the tracker's own e-mail when it sends one."""

    key: str
    name: str = ""
    email: str | None = None

    @property
    def shown(self) -> str:
        return self.name or self.key or self.email or "someone"


@dataclass(frozen=True)
class Change:
    event: str  # the tracker's name of it, for the log: "issues.assigned"
    action: str  # ASSIGNED, CLOSED, NOT_DONE, REOPENED, UNASSIGNED or OTHER
    key: str = ""  # the issue's key as the tracker shows it now: "acme/app#123"
    title: str = ""
    url: str | None = None  # the issue's web address as sent, not yet checked
    due: dt.date | None = None
    people: tuple[Person, ...] = field(default_factory=tuple)
    note: str = ""  # why nothing is done, for OTHER
    # The due date was set, changed or removed by this event (`due` is the new one).
    due_changed: bool = False
    # Keys the issue had before (moved to another project or team), newest first.
    previous_keys: tuple[str, ...] = ()
    # For NOT_DONE: how the tracker closed it, in words: "as not planned".
    closed_as: str = ""


class Issue(TypedDict):
    """What every Change a tracker's `read` makes of one issue event carries
    (its `base`)."""

    event: str
    key: str
    title: str
    url: str | None
    due: dt.date | None


class IssueUpdate(Issue):
    """The base of the trackers whose events say what changed."""

    due_changed: bool
    previous_keys: NotRequired[tuple[str, ...]]


class NotAnIssueEvent(ValueError):
    """The JSON is not shaped as the tracker's issue events are."""


def obj(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def text(value: Any) -> str:
    """`value` trimmed when it is a string, else ""."""
    return value.strip() if isinstance(value, str) else ""


def email(value: Any) -> str | None:
    """A real-looking address: trackers send "" or "[REDACTED]" when hidden."""
    said = text(value)
    return said.lower() if "@" in said and " " not in said else None


def date(value: Any) -> dt.date | None:
    said = text(value)
    if not said:
        return None
    try:
        return dt.date.fromisoformat(said[:10])
    except ValueError:
        return None


def url(value: Any) -> str | None:
    """The address as sent (the connection decides whether to use it)."""
    said = text(value)
    return said if said and len(said) <= URL_MAX else None


def person(key: Any, name: Any = None, address: Any = None) -> Person:
    return Person(key=text(key), name=text(name), email=email(address))


def unique(people: list[Person]) -> tuple[Person, ...]:
    seen, out = set(), []
    for one in people:
        marker = (one.key.lower(), one.email)
        if marker not in seen and (one.key or one.email):
            seen.add(marker)
            out.append(one)
    return tuple(out)
