"""What a tracker's delivery says, read into one shape (`Change`), whatever
the tracker. Pure functions over the parsed JSON and the headers; no database.

Each reader knows its tracker's issue events as its documentation shows them:

- GitHub `issues` events (`X-GitHub-Event: issues`): `opened` with assignees and
  `assigned` assign; `closed` (done, or not done when `state_reason` is
  `not_planned` or `duplicate`), `reopened`, `unassigned`; `milestoned` and
  `demilestoned` change the due date, which is the milestone's `due_on`.
- GitLab `Issue Hook`: `object_attributes.action` `open` (with assignees),
  `update` (assignees added or removed, from `changes.assignees`; the due date,
  from `changes.due_date`), `close` (not done when closed as a duplicate,
  `duplicated_to_id`; a move, `moved_to_id`, is neither), `reopen`; `due_date`.
- Linear `Issue` events: `create` with an assignee; `update` with `assigneeId`
  in `updatedFrom` (assigned or unassigned), a state change (completed,
  canceled, or back from either), `dueDate` in `updatedFrom`; `dueDate`. An
  issue moved to another team keeps its old keys in `previousIdentifiers`.
- Jira `jira:issue_created` with an assignee; `jira:issue_updated` with an
  `assignee`, `status`/`resolution`, `duedate` or `Key` (a move to another
  project) item in its changelog; done means the status category `done`, not
  done a resolution (or status) such as "Won't Do" in it.

Who is who: each tracker's person is matched to the identity map by one field
the tracker keeps unique and the person cannot set to someone else's
(`IDENTITY_FIELD`); display names are only shown. Links are read as sent; the
connection checks them (`trackers.services`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict
from urllib.parse import urlsplit

ASSIGNED = "assigned"
CLOSED = "closed"
# Closed without being done: not planned, canceled, a duplicate, won't do.
NOT_DONE = "not_done"
REOPENED = "reopened"
UNASSIGNED = "unassigned"
OTHER = "other"

# The one field of a tracker's user that the identity map is matched against:
# unique in the tracker and not chosen to look like someone else (a display
# name is neither). Jira Server and Data Center have no accountId: there the
# user name (`name`, the login an administrator gives) stands in.
IDENTITY_FIELD = {
    "github": "login",
    "gitlab": "username",
    "linear": "user id",
    "jira": "accountId",
}

# Jira resolutions (and, for workflows without one, statuses) in the done
# category that mean the work was not done: Jira's own defaults, compared
# lower-case with straight apostrophes.
JIRA_NOT_DONE = frozenset(
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

URL_MAX = 500


@dataclass(frozen=True)
class Person:
    """An assignee as the tracker names them: `key`, the one field the identity
    map is matched against (`IDENTITY_FIELD`); `name`, how to show them (never
    matched); the tracker's own e-mail when it sends one."""

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


class _Issue(TypedDict):
    """What every Change a reader makes of one issue event carries (its `base`)."""

    event: str
    key: str
    title: str
    url: str | None
    due: dt.date | None


class _IssueUpdate(_Issue):
    """The base of the trackers whose events say what changed."""

    due_changed: bool
    previous_keys: NotRequired[tuple[str, ...]]


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


def _url(value: Any) -> str | None:
    """The address as sent (the connection decides whether to use it)."""
    text = _s(value)
    return text if text and len(text) <= URL_MAX else None


def _person(key: Any, name: Any = None, email: Any = None) -> Person:
    return Person(key=_s(key), name=_s(name), email=_email(email))


def _unique(people: list[Person]) -> tuple[Person, ...]:
    seen, out = set(), []
    for person in people:
        marker = (person.key.lower(), person.email)
        if marker not in seen and (person.key or person.email):
            seen.add(marker)
            out.append(person)
    return tuple(out)


# --- GitHub ----------------------------------------------------------------------

# `issue.state_reason` of a close that is not a completion.
GITHUB_NOT_DONE = {"not_planned": "as not planned", "duplicate": "as a duplicate"}


def _github_person(user: Any) -> Person:
    user = _d(user)
    # GitHub has no display name in webhook users: the login is both.
    return _person(user.get("login"), None, user.get("email"))


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
    base: _Issue = {
        "event": event,
        "key": f"{repo}#{number}",
        "title": _s(issue.get("title")),
        "url": _url(issue.get("html_url")),
        "due": _date(_d(issue.get("milestone")).get("due_on")),
    }
    assignees = [_github_person(u) for u in issue.get("assignees") or [] if isinstance(u, dict)]
    if action == "assigned":
        people = [_github_person(data.get("assignee")), *assignees]
        return Change(action=ASSIGNED, people=_unique(people), **base)
    if action == "opened" and assignees:
        return Change(action=ASSIGNED, people=_unique(assignees), **base)
    if action == "closed":
        reason = _s(issue.get("state_reason"))
        if reason in GITHUB_NOT_DONE:
            return Change(action=NOT_DONE, closed_as=GITHUB_NOT_DONE[reason], **base)
        return Change(action=CLOSED, **base)
    if action == "reopened":
        return Change(action=REOPENED, **base)
    if action == "unassigned":
        return Change(action=UNASSIGNED, **base)
    if action in ("milestoned", "demilestoned"):
        # The issue's milestone, and with it its due date, was set or removed.
        return Change(action=OTHER, due_changed=True, **base)
    return Change(action=OTHER, note=f"An issue {action or 'event'}: nothing to do.", **base)


# --- GitLab ----------------------------------------------------------------------


def _gitlab_person(user: Any) -> Person:
    user = _d(user)
    return _person(user.get("username"), user.get("name"), user.get("email"))


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
    changes = _d(data.get("changes"))
    base: _IssueUpdate = {
        "event": event,
        "key": f"{path}#{iid}",
        "title": _s(attrs.get("title")),
        "url": _url(attrs.get("url")),
        "due": _date(attrs.get("due_date")),
        "due_changed": action == "update" and "due_date" in changes,
    }
    assignees = [_gitlab_person(u) for u in data.get("assignees") or [] if isinstance(u, dict)]
    if action == "open" and assignees:
        return Change(action=ASSIGNED, people=_unique(assignees), **base)
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
    change = _d(changes.get("assignees"))
    if action == "update" and change:
        before = {_s(_d(u).get("username")).lower() for u in change.get("previous") or []}
        now = [_d(u) for u in change.get("current") or []]
        added = [_gitlab_person(u) for u in now if _s(u.get("username")).lower() not in before]
        if added:
            return Change(action=ASSIGNED, people=_unique(added), **base)
        return Change(action=UNASSIGNED, **base)
    note = "" if base["due_changed"] else f"An issue {action or 'event'}: nothing to do."
    return Change(action=OTHER, note=note, **base)


# --- Linear ----------------------------------------------------------------------


def _linear_person(user: Any) -> Person:
    user = _d(user)
    return _person(user.get("id"), user.get("name") or user.get("displayName"), user.get("email"))


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
    before = _d(data.get("updatedFrom"))
    previous = issue.get("previousIdentifiers")
    base: _IssueUpdate = {
        "event": event,
        "key": key,
        "title": _s(issue.get("title")),
        "url": _url(issue.get("url")) or _url(data.get("url")),
        "due": _date(issue.get("dueDate")),
        "due_changed": action == "update" and "dueDate" in before,
        # Oldest first in Linear's payload; tried newest first.
        "previous_keys": tuple(
            k
            for k in (_s(x) for x in reversed(previous if isinstance(previous, list) else []))
            if k and k != key
        ),
    }
    assignee = issue.get("assignee")
    has_assignee = isinstance(assignee, dict) or bool(_s(issue.get("assigneeId")))
    state = _d(issue.get("state"))
    state_type = _s(state.get("type"))
    if action == "create" and has_assignee:
        person = assignee if isinstance(assignee, dict) else {"id": issue.get("assigneeId")}
        return Change(action=ASSIGNED, people=_unique([_linear_person(person)]), **base)
    if action == "update" and "assigneeId" in before:
        if has_assignee:
            person = assignee if isinstance(assignee, dict) else {"id": issue.get("assigneeId")}
            return Change(action=ASSIGNED, people=_unique([_linear_person(person)]), **base)
        return Change(action=UNASSIGNED, **base)
    if action == "update" and "stateId" in before:
        if state_type == "completed":
            return Change(action=CLOSED, **base)
        if state_type == "canceled":
            name = _s(state.get("name")) or "Canceled"
            return Change(action=NOT_DONE, closed_as=f"as {name}", **base)
        if before.get("completedAt") or before.get("canceledAt"):
            return Change(action=REOPENED, **base)
        return Change(action=OTHER, note=f"The state changed ({state_type or 'unknown'}).", **base)
    note = "" if base["due_changed"] else f"An issue {action or 'event'}: nothing to do."
    return Change(action=OTHER, note=note, **base)


# --- Jira ------------------------------------------------------------------------


def _jira_person(user: Any) -> Person:
    user = _d(user)
    # Jira Cloud: the accountId. Server and Data Center have none: the user
    # name an administrator gave (`name`). Never the displayName.
    key = _s(user.get("accountId")) or _s(user.get("name"))
    return _person(key, user.get("displayName"), user.get("emailAddress"))


def _jira_browse_url(issue: dict[str, Any], key: str) -> str | None:
    """`<site>/browse/KEY`, where the site is what comes before `/rest/` in
    the issue's `self`: Jira Server and Data Center may run under a context
    path (`https://jira.example/jira/rest/api/2/issue/1` is under `/jira`)."""
    parts = urlsplit(_s(issue.get("self")))
    if not parts.scheme or not parts.netloc:
        return None
    path = parts.path
    cut = path.find("/rest/")
    prefix = path[:cut] if cut >= 0 else ""
    return _url(f"{parts.scheme}://{parts.netloc}{prefix}/browse/{key}")


def _plain(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'").lower().strip()


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
    items = {
        _s(_d(i).get("field")).lower(): _d(i) for i in _d(data.get("changelog")).get("items") or []
    }
    # A move to another project: the changelog's `Key` item holds the old key.
    old_key = _s(items.get("key", {}).get("fromString"))
    base: _IssueUpdate = {
        "event": event,
        "key": key,
        "title": _s(fields.get("summary")),
        "url": _jira_browse_url(issue, key),
        "due": _date(fields.get("duedate")),
        "due_changed": kind == "jira:issue_updated" and "duedate" in items,
        "previous_keys": (old_key,) if old_key and old_key != key else (),
    }
    assignee = fields.get("assignee")
    if kind == "jira:issue_created":
        if isinstance(assignee, dict):
            return Change(action=ASSIGNED, people=_unique([_jira_person(assignee)]), **base)
        return Change(action=OTHER, note="An issue created with no assignee.", **base)
    if "assignee" in items:
        if isinstance(assignee, dict):
            return Change(action=ASSIGNED, people=_unique([_jira_person(assignee)]), **base)
        return Change(action=UNASSIGNED, **base)
    if "status" in items or "resolution" in items:
        status = _d(fields.get("status"))
        category = _s(_d(status.get("statusCategory")).get("key"))
        resolution = _s(_d(fields.get("resolution")).get("name"))
        status_name = _s(status.get("name"))
        if category == "done":
            for said in (resolution, status_name):
                if _plain(said) in JIRA_NOT_DONE:
                    return Change(action=NOT_DONE, closed_as=f"as {said}", **base)
            return Change(action=CLOSED, **base)
        if "resolution" in items and not items["resolution"].get("to"):
            return Change(action=REOPENED, **base)
        said = status_name or "another status"
        return Change(action=OTHER, note=f"The status changed to {said}.", **base)
    if base["due_changed"] or base["previous_keys"]:
        return Change(action=OTHER, **base)
    return Change(action=OTHER, note="An issue update with nothing to do.", **base)


READERS = {"github": github, "gitlab": gitlab, "linear": linear, "jira": jira}


def read(kind: str, headers: Mapping[str, str], data: Any) -> Change:
    """The delivery as a Change; NotAnIssueEvent when its JSON is not an object
    shaped as this tracker's events."""
    if not isinstance(data, dict):
        raise NotAnIssueEvent("the body is not a JSON object")
    return READERS[kind](headers, data)
