"""What a tracker's delivery says, read into one shape (`Change`), whatever
the tracker. Pure functions over the parsed JSON and the headers; no database.

Each reader knows its tracker's issue events as its documentation shows them:

- GitHub `issues` events (`X-GitHub-Event: issues`): `opened` with assignees and
  `assigned` assign; `closed`, `reopened`, `unassigned`. The due date is the
  milestone's `due_on`, when the issue has a milestone.
- GitLab `Issue Hook`: `object_attributes.action` `open` (with assignees),
  `update` (assignees added or removed, from `changes.assignees`), `close`,
  `reopen`; `due_date`.
- Linear `Issue` events: `create` with an assignee; `update` with `assigneeId`
  in `updatedFrom` (assigned or unassigned) or a state change (completed, or
  back from completed); `dueDate`.
- Jira `jira:issue_created` with an assignee; `jira:issue_updated` with an
  `assignee` or `status`/`resolution` item in its changelog; `duedate`; done
  means the status category `done`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

ASSIGNED = "assigned"
CLOSED = "closed"
REOPENED = "reopened"
UNASSIGNED = "unassigned"
OTHER = "other"


@dataclass(frozen=True)
class Person:
    """An assignee as the tracker names them: the names the identity map is
    tried with, in order, and the tracker's own e-mail when it sends one."""

    names: tuple[str, ...]
    email: str | None = None

    @property
    def shown(self) -> str:
        return self.names[0] if self.names else (self.email or "someone")


@dataclass(frozen=True)
class Change:
    event: str  # the tracker's name of it, for the log: "issues.assigned"
    action: str  # ASSIGNED, CLOSED, REOPENED, UNASSIGNED or OTHER
    key: str = ""  # the issue's stable key: the commitments' externalId
    title: str = ""
    url: str | None = None
    due: dt.date | None = None
    people: tuple[Person, ...] = field(default_factory=tuple)
    note: str = ""  # why nothing is done, for OTHER


class NotAnIssueEvent(ValueError):
    """The JSON is not shaped as the tracker's issue events are."""


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _s(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _email(value: Any) -> str | None:
    """A real-looking address: trackers send "" or "[REDACTED]" when hidden."""
    text = _s(value)
    return text.lower() if "@" in text and " " not in text else None


def _date(value: Any) -> dt.date | None:
    text = _s(value)
    if not text:
        return None
    try:
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        return None


def _web_url(value: Any) -> str | None:
    text = _s(value)
    return text if urlsplit(text).scheme in ("https", "http") and len(text) <= 500 else None


def _person(names: list[Any], email: Any = None) -> Person:
    return Person(names=tuple(n for n in (_s(x) for x in names) if n), email=_email(email))


def _unique(people: list[Person]) -> tuple[Person, ...]:
    seen, out = set(), []
    for person in people:
        key = (person.names, person.email)
        if key not in seen and (person.names or person.email):
            seen.add(key)
            out.append(person)
    return tuple(out)


# --- GitHub ----------------------------------------------------------------------


def _github_person(user: Any) -> Person:
    user = _d(user)
    return _person([user.get("login")], user.get("email"))


def github(headers: Mapping[str, str], data: dict[str, Any]) -> Change:
    kind = _s(headers.get("X-GitHub-Event")) or "unknown"
    action = _s(data.get("action"))
    event = f"{kind}.{action}" if action else kind
    if kind == "ping":
        return Change(event, OTHER, note="GitHub's ping: the connection works.")
    if kind != "issues":
        return Change(event, OTHER, note=f"A {kind} event: only issues events are used.")
    issue = _d(data.get("issue"))
    repo = _s(_d(data.get("repository")).get("full_name"))
    number = issue.get("number")
    if not repo or not isinstance(number, int):
        raise NotAnIssueEvent("an issues event without repository.full_name and issue.number")
    base = {
        "event": event,
        "key": f"{repo}#{number}",
        "title": _s(issue.get("title")),
        "url": _web_url(issue.get("html_url")),
        "due": _date(_d(issue.get("milestone")).get("due_on")),
    }
    assignees = [_github_person(u) for u in issue.get("assignees") or [] if isinstance(u, dict)]
    if action == "assigned":
        people = [_github_person(data.get("assignee")), *assignees]
        return Change(action=ASSIGNED, people=_unique(people), **base)
    if action == "opened" and assignees:
        return Change(action=ASSIGNED, people=_unique(assignees), **base)
    if action == "closed":
        return Change(action=CLOSED, **base)
    if action == "reopened":
        return Change(action=REOPENED, **base)
    if action == "unassigned":
        return Change(action=UNASSIGNED, **base)
    return Change(action=OTHER, note=f"An issue {action or 'event'}: nothing to do.", **base)


# --- GitLab ----------------------------------------------------------------------


def _gitlab_person(user: Any) -> Person:
    user = _d(user)
    return _person([user.get("username")], user.get("email"))


def gitlab(headers: Mapping[str, str], data: dict[str, Any]) -> Change:
    hook = _s(headers.get("X-Gitlab-Event")) or "unknown"
    attrs = _d(data.get("object_attributes"))
    action = _s(attrs.get("action"))
    event = f"{hook}.{action}" if action else hook
    if data.get("object_kind") != "issue":
        kind = _s(data.get("object_kind")) or hook
        return Change(event, OTHER, note=f"A {kind} event: only issue events are used.")
    path = _s(_d(data.get("project")).get("path_with_namespace"))
    iid = attrs.get("iid")
    if not path or not isinstance(iid, int):
        raise NotAnIssueEvent("an issue event without project.path_with_namespace and iid")
    base = {
        "event": event,
        "key": f"{path}#{iid}",
        "title": _s(attrs.get("title")),
        "url": _web_url(attrs.get("url")),
        "due": _date(attrs.get("due_date")),
    }
    assignees = [_gitlab_person(u) for u in data.get("assignees") or [] if isinstance(u, dict)]
    if action == "open" and assignees:
        return Change(action=ASSIGNED, people=_unique(assignees), **base)
    if action == "close":
        return Change(action=CLOSED, **base)
    if action == "reopen":
        return Change(action=REOPENED, **base)
    change = _d(_d(data.get("changes")).get("assignees"))
    if action == "update" and change:
        before = {_s(_d(u).get("username")) for u in change.get("previous") or []}
        now = [_d(u) for u in change.get("current") or []]
        added = [_gitlab_person(u) for u in now if _s(u.get("username")) not in before]
        if added:
            return Change(action=ASSIGNED, people=_unique(added), **base)
        return Change(action=UNASSIGNED, **base)
    return Change(action=OTHER, note=f"An issue {action or 'event'}: nothing to do.", **base)


# --- Linear ----------------------------------------------------------------------


def _linear_person(user: Any) -> Person:
    user = _d(user)
    return _person([user.get("name"), user.get("displayName"), user.get("id")], user.get("email"))


def linear(headers: Mapping[str, str], data: dict[str, Any]) -> Change:
    kind = _s(data.get("type")) or _s(headers.get("Linear-Event")) or "unknown"
    action = _s(data.get("action"))
    event = f"{kind}.{action}" if action else kind
    if kind != "Issue":
        return Change(event, OTHER, note=f"A {kind} event: only Issue events are used.")
    issue = _d(data.get("data"))
    key = _s(issue.get("identifier"))
    if not key:
        raise NotAnIssueEvent("an Issue event without data.identifier")
    base = {
        "event": event,
        "key": key,
        "title": _s(issue.get("title")),
        "url": _web_url(issue.get("url")) or _web_url(data.get("url")),
        "due": _date(issue.get("dueDate")),
    }
    assignee = issue.get("assignee")
    has_assignee = isinstance(assignee, dict) or bool(_s(issue.get("assigneeId")))
    before = _d(data.get("updatedFrom"))
    state_type = _s(_d(issue.get("state")).get("type"))
    if action == "create" and has_assignee:
        return Change(action=ASSIGNED, people=_unique([_linear_person(assignee)]), **base)
    if action == "update" and "assigneeId" in before:
        if has_assignee:
            return Change(action=ASSIGNED, people=_unique([_linear_person(assignee)]), **base)
        return Change(action=UNASSIGNED, **base)
    if action == "update" and "stateId" in before:
        if state_type == "completed":
            return Change(action=CLOSED, **base)
        if before.get("completedAt") or before.get("canceledAt"):
            return Change(action=REOPENED, **base)
        return Change(action=OTHER, note=f"The state changed ({state_type or 'unknown'}).", **base)
    return Change(action=OTHER, note=f"An issue {action or 'event'}: nothing to do.", **base)


# --- Jira ------------------------------------------------------------------------


def _jira_person(user: Any) -> Person:
    user = _d(user)
    names = [user.get("accountId"), user.get("name"), user.get("displayName")]
    return _person(names, user.get("emailAddress"))


def _jira_browse_url(issue: dict[str, Any], key: str) -> str | None:
    parts = urlsplit(_s(issue.get("self")))
    if parts.scheme not in ("https", "http") or not parts.netloc:
        return None
    return _web_url(f"{parts.scheme}://{parts.netloc}/browse/{key}")


def jira(headers: Mapping[str, str], data: dict[str, Any]) -> Change:
    kind = _s(data.get("webhookEvent")) or "unknown"
    detail = _s(data.get("issue_event_type_name"))
    event = f"{kind}.{detail}" if detail else kind
    if kind not in ("jira:issue_created", "jira:issue_updated"):
        return Change(event, OTHER, note=f"A {kind} event: only issue events are used.")
    issue = _d(data.get("issue"))
    key = _s(issue.get("key"))
    if not key:
        raise NotAnIssueEvent("an issue event without issue.key")
    fields = _d(issue.get("fields"))
    base = {
        "event": event,
        "key": key,
        "title": _s(fields.get("summary")),
        "url": _jira_browse_url(issue, key),
        "due": _date(fields.get("duedate")),
    }
    assignee = fields.get("assignee")
    if kind == "jira:issue_created":
        if isinstance(assignee, dict):
            return Change(action=ASSIGNED, people=_unique([_jira_person(assignee)]), **base)
        return Change(action=OTHER, note="An issue created with no assignee.", **base)
    items = {
        _s(_d(i).get("field")).lower(): _d(i) for i in _d(data.get("changelog")).get("items") or []
    }
    if "assignee" in items:
        if isinstance(assignee, dict):
            return Change(action=ASSIGNED, people=_unique([_jira_person(assignee)]), **base)
        return Change(action=UNASSIGNED, **base)
    if "status" in items or "resolution" in items:
        category = _s(_d(_d(fields.get("status")).get("statusCategory")).get("key"))
        if category == "done":
            return Change(action=CLOSED, **base)
        if "resolution" in items and not items["resolution"].get("to"):
            return Change(action=REOPENED, **base)
        status = _s(_d(fields.get("status")).get("name")) or "another status"
        return Change(action=OTHER, note=f"The status changed to {status}.", **base)
    return Change(action=OTHER, note="An issue update with nothing to do.", **base)


READERS = {"github": github, "gitlab": gitlab, "linear": linear, "jira": jira}


def read(kind: str, headers: Mapping[str, str], data: Any) -> Change:
    """The delivery as a Change; NotAnIssueEvent when its JSON is not an object
    shaped as this tracker's events."""
    if not isinstance(data, dict):
        raise NotAnIssueEvent("the body is not a JSON object")
    return READERS[kind](headers, data)
