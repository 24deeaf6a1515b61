"""GitLab: its `Issue Hook`: `object_attributes.action` `open` (with
assignees), `update` (assignees added or removed, from `changes.assignees`;
the due date, from `changes.due_date`), `close` (not done when closed as a
duplicate, `duplicated_to_id`; a move, `moved_to_id`, is neither), `reopen`;
`due_date`. Authenticated by `X-Gitlab-Token` equal to the secret; GitLab
may be self-hosted, so it has no one site.
"""

from __future__ import annotations

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


def _user(user: Any) -> Person:
    user = obj(user)
    return person(user.get("username"), user.get("name"), user.get("email"))


class GitLab(Tracker):
    scheme = Scheme("X-Gitlab-Token", token=True)
    delivery_headers = ("Idempotency-Key", "X-Gitlab-Event-UUID")
    identity_field = "username"

    def read(self, headers: Mapping[str, str], data: dict[str, Any]) -> Change:
        hook = text(headers.get("X-Gitlab-Event")) or "unknown"
        attrs = obj(data.get("object_attributes"))
        action = text(attrs.get("action"))
        event = f"{hook}.{action}" if action else hook
        if data.get("object_kind") != "issue":
            event_type = text(data.get("object_kind")) or hook
            return Change(event, OTHER, note=f"A {event_type} event: only issue events are used.")
        path = text(obj(data.get("project")).get("path_with_namespace"))
        iid = attrs.get("iid")
        if not path or not isinstance(iid, int):
            raise NotAnIssueEvent("an issue event without project.path_with_namespace and iid")
        changes = obj(data.get("changes"))
        base: IssueUpdate = {
            "event": event,
            "key": f"{path}#{iid}",
            "title": text(attrs.get("title")),
            "url": url(attrs.get("url")),
            "due": date(attrs.get("due_date")),
            "due_changed": action == "update" and "due_date" in changes,
        }
        assignees = [_user(u) for u in data.get("assignees") or [] if isinstance(u, dict)]
        if action == "open" and assignees:
            return Change(action=ASSIGNED, people=unique(assignees), **base)
        if action == "close":
            if attrs.get("moved_to_id"):
                # GitLab closes the old issue of a move and names the new one only
                # by its database id: not done, not undone; the log says so.
                note = "Closed by moving it to another project: nothing done."
                return Change(action=OTHER, note=note, **base)
            if attrs.get("duplicated_to_id"):
                return Change(action=NOT_DONE, closed_as="as a duplicate", **base)
            return Change(action=CLOSED, **base)
        if action == "reopen":
            return Change(action=REOPENED, **base)
        change = obj(changes.get("assignees"))
        if action == "update" and change:
            before = {text(obj(u).get("username")).lower() for u in change.get("previous") or []}
            now = [obj(u) for u in change.get("current") or []]
            added = [_user(u) for u in now if text(u.get("username")).lower() not in before]
            if added:
                return Change(action=ASSIGNED, people=unique(added), **base)
            return Change(action=UNASSIGNED, **base)
        note = "" if base["due_changed"] else f"An issue {action or 'event'}: nothing to do."
        return Change(action=OTHER, note=note, **base)
