"""GitHub: its `issues` events (`X-GitHub-Event: issues`): `opened` with
assignees and `assigned` assign; `closed` (done, or not done when
`state_reason` is `not_planned` or `duplicate`), `reopened`, `unassigned`;
`milestoned` and `demilestoned` change the due date, which is the milestone's
`due_on`. Signed `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`.
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
    Issue,
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

# `issue.state_reason` of a close that is not a completion.
NOT_DONE_REASONS = {"not_planned": "as not planned", "duplicate": "as a duplicate"}


def _user(user: Any) -> Person:
    user = obj(user)
    # GitHub has no display name in webhook users: the login is both.
    return person(user.get("login"), None, user.get("email"))


class GitHub(Tracker):
    scheme = Scheme("X-Hub-Signature-256", prefix="sha256=")
    delivery_headers = ("X-GitHub-Delivery",)
    identity_field = "login"
    default_site = "github.com"

    def read(self, headers: Mapping[str, str], data: dict[str, Any]) -> Change:
        event_type = text(headers.get("X-GitHub-Event")) or "unknown"
        action = text(data.get("action"))
        event = f"{event_type}.{action}" if action else event_type
        if event_type == "ping":
            return Change(event, OTHER, note="GitHub's ping: the connection works.")
        if event_type != "issues":
            return Change(event, OTHER, note=f"A {event_type} event: only issues events are used.")
        issue = obj(data.get("issue"))
        repo = text(obj(data.get("repository")).get("full_name"))
        number = issue.get("number")
        if not repo or not isinstance(number, int):
            raise NotAnIssueEvent("an issues event without repository.full_name and issue.number")
        base: Issue = {
            "event": event,
            "key": f"{repo}#{number}",
            "title": text(issue.get("title")),
            "url": url(issue.get("html_url")),
            "due": date(obj(issue.get("milestone")).get("due_on")),
        }
        assignees = [_user(u) for u in issue.get("assignees") or [] if isinstance(u, dict)]
        if action == "assigned":
            people = [_user(data.get("assignee")), *assignees]
            return Change(action=ASSIGNED, people=unique(people), **base)
        if action == "opened" and assignees:
            return Change(action=ASSIGNED, people=unique(assignees), **base)
        if action == "closed":
            reason = text(issue.get("state_reason"))
            if reason in NOT_DONE_REASONS:
                return Change(action=NOT_DONE, closed_as=NOT_DONE_REASONS[reason], **base)
            return Change(action=CLOSED, **base)
        if action == "reopened":
            return Change(action=REOPENED, **base)
        if action == "unassigned":
            return Change(action=UNASSIGNED, **base)
        if action in ("milestoned", "demilestoned"):
            # The issue's milestone, and with it its due date, was set or removed.
            return Change(action=OTHER, due_changed=True, **base)
        return Change(action=OTHER, note=f"An issue {action or 'event'}: nothing to do.", **base)
