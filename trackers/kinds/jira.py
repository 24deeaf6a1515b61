"""Jira: `jira:issue_created` with an assignee; `jira:issue_updated` with an
`assignee`, `status`/`resolution`, `duedate` or `Key` (a move to another
project) item in its changelog; done means the status category `done`, not
done a resolution (or status) such as "Won't Do" in it. Signed
`X-Hub-Signature: sha256=<hex HMAC-SHA256 of the body>`. Jira Cloud users are
matched by `accountId`; Jira Server and Data Center have none, and there the
user name (`name`, the login an administrator gives) stands in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

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

# Resolutions (and, for workflows without one, statuses) in the done category
# that mean the work was not done: Jira's own defaults, compared lower-case
# with straight apostrophes.
NOT_DONE_NAMES = frozenset(
    {
        "won't do",
        "won't fix",
        "duplicate",
        "cannot reproduce",
        "incomplete",
        "declined",
        "rejected",
        "canceled",
        "cancelled",
        "obsolete",
        "not a bug",
    }
)


def _user(user: Any) -> Person:
    user = obj(user)
    # Jira Cloud: the accountId. Server and Data Center have none: the user
    # name an administrator gave (`name`). Never the displayName.
    key = text(user.get("accountId")) or text(user.get("name"))
    return person(key, user.get("displayName"), user.get("emailAddress"))


def _jira_browseurl(issue: dict[str, Any], key: str) -> str | None:
    """`<site>/browse/KEY`, where the site is what comes before `/rest/` in
    the issue's `self`: Jira Server and Data Center may run under a context
    path (`https://jira.example/jira/rest/api/2/issue/1` is under `/jira`)."""
    parts = urlsplit(text(issue.get("self")))
    if not parts.scheme or not parts.netloc:
        return None
    path = parts.path
    cut = path.find("/rest/")
    prefix = path[:cut] if cut >= 0 else ""
    return url(f"{parts.scheme}://{parts.netloc}{prefix}/browse/{key}")


def _plain(said: str) -> str:
    return said.replace("\u2019", "'").replace("\u2018", "'").lower().strip()


class Jira(Tracker):
    scheme = Scheme("X-Hub-Signature", prefix="sha256=")
    delivery_headers = ("X-Atlassian-Webhook-Identifier",)
    identity_field = "accountId"

    def read(self, headers: Mapping[str, str], data: dict[str, Any]) -> Change:
        event_type = text(data.get("webhookEvent")) or "unknown"
        detail = text(data.get("issue_event_type_name"))
        event = f"{event_type}.{detail}" if detail else event_type
        if event_type not in ("jira:issue_created", "jira:issue_updated"):
            return Change(event, OTHER, note=f"A {event_type} event: only issue events are used.")
        issue = obj(data.get("issue"))
        key = text(issue.get("key"))
        if not key:
            raise NotAnIssueEvent("an issue event without issue.key")
        fields = obj(issue.get("fields"))
        items = {
            text(obj(i).get("field")).lower(): obj(i)
            for i in obj(data.get("changelog")).get("items") or []
        }
        # A move to another project: the changelog's `Key` item holds the old key.
        old_key = text(items.get("key", {}).get("fromString"))
        base: IssueUpdate = {
            "event": event,
            "key": key,
            "title": text(fields.get("summary")),
            "url": _jira_browseurl(issue, key),
            "due": date(fields.get("duedate")),
            "due_changed": event_type == "jira:issue_updated" and "duedate" in items,
            "previous_keys": (old_key,) if old_key and old_key != key else (),
        }
        assignee = fields.get("assignee")
        if event_type == "jira:issue_created":
            if isinstance(assignee, dict):
                return Change(action=ASSIGNED, people=unique([_user(assignee)]), **base)
            return Change(action=OTHER, note="An issue created with no assignee.", **base)
        if "assignee" in items:
            if isinstance(assignee, dict):
                return Change(action=ASSIGNED, people=unique([_user(assignee)]), **base)
            return Change(action=UNASSIGNED, **base)
        if "status" in items or "resolution" in items:
            status = obj(fields.get("status"))
            category = text(obj(status.get("statusCategory")).get("key"))
            resolution = text(obj(fields.get("resolution")).get("name"))
            status_name = text(status.get("name"))
            if category == "done":
                for said in (resolution, status_name):
                    if _plain(said) in NOT_DONE_NAMES:
                        return Change(action=NOT_DONE, closed_as=f"as {said}", **base)
                return Change(action=CLOSED, **base)
            if "resolution" in items and not items["resolution"].get("to"):
                return Change(action=REOPENED, **base)
            said = status_name or "another status"
            return Change(action=OTHER, note=f"The status changed to {said}.", **base)
        if base["due_changed"] or base["previous_keys"]:
            return Change(action=OTHER, **base)
        return Change(action=OTHER, note="An issue update with nothing to do.", **base)
