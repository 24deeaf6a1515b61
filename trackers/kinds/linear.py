"""Linear: its `Issue` events: `create` with an assignee; `update` with
`assigneeId` in `updatedFrom` (assigned or unassigned), a state change
(completed, canceled, or back from either), `dueDate` in `updatedFrom`;
`dueDate`. An issue moved to another team keeps its old keys in
`previousIdentifiers`. Signed `Linear-Signature: <hex HMAC-SHA256 of the
body>`, and its `webhookTimestamp`, inside the signed body, must be within a
minute of now (`fresh`). Linear makes its own signing secret.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from trackers.kinds.base import Tracker
from trackers.payloads import (
    ASSIGNED,
    CLOSED,
    NOT_DONE,
    OTHER,
    REOPENED,
    UNASSIGNED,
    Change,
    IssueUpdate,
    NotAnIssueEvent,
    Person,
    date,
    obj,
    person,
    text,
    unique,
    url,
)
from trackers.signatures import Scheme

TOLERANCE = dt.timedelta(minutes=1)


def _user(user: Any) -> Person:
    user = obj(user)
    return person(user.get("id"), user.get("name") or user.get("displayName"), user.get("email"))


class Linear(Tracker):
    scheme = Scheme("Linear-Signature")
    delivery_headers = ("Linear-Delivery",)
    identity_field = "user id"
    default_site = "linear.app"
    makes_own_secret = True
    stale = "The delivery's webhookTimestamp is not within a minute of now."

    def fresh(self, data: Any, *, now: dt.datetime) -> bool:
        """Linear's `webhookTimestamp` (milliseconds since the epoch) is within
        a minute of `now`: a captured delivery cannot be replayed later."""
        timestamp_ms = data.get("webhookTimestamp") if isinstance(data, dict) else None
        if isinstance(timestamp_ms, bool) or not isinstance(timestamp_ms, int | float):
            return False
        try:
            sent = dt.datetime.fromtimestamp(timestamp_ms / 1000, tz=dt.UTC)
        except (OverflowError, OSError, ValueError):
            return False
        return abs(now - sent) <= TOLERANCE

    def read(self, headers: Mapping[str, str], data: dict[str, Any]) -> Change:
        event_type = text(data.get("type")) or text(headers.get("Linear-Event")) or "unknown"
        action = text(data.get("action"))
        event = f"{event_type}.{action}" if action else event_type
        if event_type != "Issue":
            return Change(event, OTHER, note=f"A {event_type} event: only Issue events are used.")
        issue = obj(data.get("data"))
        key = text(issue.get("identifier"))
        if not key:
            raise NotAnIssueEvent("an Issue event without data.identifier")
        before = obj(data.get("updatedFrom"))
        previous = issue.get("previousIdentifiers")
        base: IssueUpdate = {
            "event": event,
            "key": key,
            "title": text(issue.get("title")),
            "url": url(issue.get("url")) or url(data.get("url")),
            "due": date(issue.get("dueDate")),
            "due_changed": action == "update" and "dueDate" in before,
            # Oldest first in Linear's payload; tried newest first.
            "previous_keys": tuple(
                k
                for k in (text(x) for x in reversed(previous if isinstance(previous, list) else []))
                if k and k != key
            ),
        }
        assignee = issue.get("assignee")
        has_assignee = isinstance(assignee, dict) or bool(text(issue.get("assigneeId")))
        state = obj(issue.get("state"))
        state_type = text(state.get("type"))
        if action == "create" and has_assignee:
            who = assignee if isinstance(assignee, dict) else {"id": issue.get("assigneeId")}
            return Change(action=ASSIGNED, people=unique([_user(who)]), **base)
        if action == "update" and "assigneeId" in before:
            if has_assignee:
                who = assignee if isinstance(assignee, dict) else {"id": issue.get("assigneeId")}
                return Change(action=ASSIGNED, people=unique([_user(who)]), **base)
            return Change(action=UNASSIGNED, **base)
        if action == "update" and "stateId" in before:
            if state_type == "completed":
                return Change(action=CLOSED, **base)
            if state_type == "canceled":
                name = text(state.get("name")) or "Canceled"
                return Change(action=NOT_DONE, closed_as=f"as {name}", **base)
            if before.get("completedAt") or before.get("canceledAt"):
                return Change(action=REOPENED, **base)
            return Change(
                action=OTHER, note=f"The state changed ({state_type or 'unknown'}).", **base
            )
        note = "" if base["due_changed"] else f"An issue {action or 'event'}: nothing to do."
        return Change(action=OTHER, note=note, **base)
