"""Deliveries shaped as each tracker's webhook documentation shows them
(abridged to the fields the documentation's examples carry), for GitLab,
Linear and Jira. Each sample function returns (payload, event header value)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from tests.harness.trackers import now_ms

# --- GitLab: "Issue Hook" (docs.gitlab.com, Webhook events, Issue events) ------------

_GITLAB_USER = {
    "id": 1,
    "name": "Administrator",
    "username": "root",
    "avatar_url": "https://www.gravatar.com/avatar/e64c7d89f26bd1972efa854d13d7dd61",
    "email": "admin@example.com",
}


def _gitlab_assignee(username: str, user_id: int) -> dict[str, Any]:
    return {
        "id": user_id,
        "name": username.title(),
        "username": username,
        "avatar_url": "https://www.gravatar.com/avatar/0?s=80",
        "email": "[REDACTED]",
    }


def gitlab_issue(action: str, *, assignees=("knight-gl",), changes=None) -> tuple[dict, str]:
    people = [_gitlab_assignee(u, n) for n, u in enumerate(assignees, start=50)]
    payload = {
        "object_kind": "issue",
        "event_type": "issue",
        "user": _GITLAB_USER,
        "project": {
            "id": 14,
            "name": "Gitlab Test",
            "description": "Aut reprehenderit ut est.",
            "web_url": "https://gitlab.example.com/group/project",
            "avatar_url": None,
            "git_ssh_url": "git@gitlab.example.com:group/project.git",
            "git_http_url": "https://gitlab.example.com/group/project.git",
            "namespace": "Group",
            "visibility_level": 20,
            "path_with_namespace": "group/project",
            "default_branch": "master",
            "homepage": "https://gitlab.example.com/group/project",
            "url": "https://gitlab.example.com/group/project.git",
        },
        "object_attributes": {
            "id": 301,
            "title": "New API: create/update/delete file",
            "assignee_ids": [p["id"] for p in people],
            "assignee_id": people[0]["id"] if people else None,
            "author_id": 1,
            "project_id": 14,
            "created_at": "2030-02-03 17:15:43 UTC",
            "updated_at": "2030-02-03 17:15:43 UTC",
            "description": "Create new API for manipulations with repository",
            "milestone_id": None,
            "state_id": 2 if action == "close" else 1,
            "confidential": False,
            "due_date": "2030-03-01",
            "iid": 45,
            "url": "https://gitlab.example.com/group/project/-/issues/45",
            "state": "closed" if action == "close" else "opened",
            "action": action,
            "labels": [],
        },
        "repository": {
            "name": "Gitlab Test",
            "url": "https://gitlab.example.com/group/project.git",
            "description": "Aut reprehenderit ut est.",
            "homepage": "https://gitlab.example.com/group/project",
        },
        "assignees": people,
        "labels": [],
        "changes": changes or {"updated_at": {"previous": None, "current": "2030-02-03"}},
    }
    return payload, "Issue Hook"


def gitlab_samples() -> dict[str, tuple[dict, str]]:
    assigned_change = {
        "assignees": {"previous": [], "current": [_gitlab_assignee("knight-gl", 50)]}
    }
    unassigned_change = {
        "assignees": {"previous": [_gitlab_assignee("knight-gl", 50)], "current": []}
    }
    push = {
        "object_kind": "push",
        "event_name": "push",
        "before": "95790bf891e76fee5e1747ab589903a6a1f80f22",
        "after": "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
        "ref": "refs/heads/master",
        "user_username": "root",
        "project_id": 14,
        "commits": [],
        "total_commits_count": 0,
    }
    return {
        "assigned": gitlab_issue("update", changes=assigned_change),
        "closed": gitlab_issue("close"),
        "reopened": gitlab_issue("reopen"),
        "unassigned": gitlab_issue("update", assignees=(), changes=unassigned_change),
        "unrelated": (push, "Push Hook"),
    }


# --- Linear: data change events (linear.app/developers/webhooks) ----------------------


def linear_issue(action: str, *, assignee=True, state="unstarted", updated_from=None):
    data: dict[str, Any] = {
        "id": "2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9",
        "createdAt": "2030-02-01T10:00:00.000Z",
        "updatedAt": "2030-02-02T10:00:00.000Z",
        "number": 42,
        "title": "Write the onboarding guide",
        "priority": 0,
        "boardOrder": 0,
        "sortOrder": -1028.25,
        "teamId": "72b2a2dc-6f4f-4423-9d34-24b5bd10634a",
        "previousIdentifiers": [],
        "creatorId": "1e9e6d9d-d7b6-4b1a-a6f4-6d3c1f2b5a90",
        "assigneeId": "5a4e5b3c-0b1a-4e0e-9d1c-3b2a1f0e9d8c" if assignee else None,
        "stateId": "7b1f8a2e-3c4d-4e5f-8a9b-0c1d2e3f4a5b",
        "priorityLabel": "No priority",
        "identifier": "ENG-42",
        "url": "https://linear.app/acme/issue/ENG-42/write-the-onboarding-guide",
        "dueDate": "2030-03-01",
        "state": {
            "id": "7b1f8a2e-3c4d-4e5f-8a9b-0c1d2e3f4a5b",
            "color": "#5e6ad2",
            "name": "Done" if state == "completed" else "Todo",
            "type": state,
        },
        "team": {"id": "72b2a2dc-6f4f-4423-9d34-24b5bd10634a", "key": "ENG", "name": "Engineering"},
        "labelIds": [],
        "labels": [],
    }
    if assignee:
        data["assignee"] = {
            "id": "5a4e5b3c-0b1a-4e0e-9d1c-3b2a1f0e9d8c",
            "name": "Knight Linear",
        }
    payload = {
        "action": action,
        "actor": {"id": "1e9e6d9d-d7b6-4b1a-a6f4-6d3c1f2b5a90", "name": "Lead", "type": "user"},
        "createdAt": "2030-02-02T10:00:00.000Z",
        "data": data,
        "url": data["url"],
        "type": "Issue",
        "organizationId": "b7e1a4d2-9c3f-4e5a-8b6d-2f1e0d9c8b7a",
        "webhookTimestamp": now_ms(),
        "webhookId": "0d2f3e4a-5b6c-4d7e-8f9a-0b1c2d3e4f5a",
    }
    if updated_from is not None:
        payload["updatedFrom"] = updated_from
    return payload, "Issue"


def linear_samples() -> dict[str, tuple[dict, str]]:
    comment = {
        "action": "create",
        "type": "Comment",
        "data": {"id": "c1", "body": "Looks good", "issueId": "2174add1"},
        "url": "https://linear.app/acme/issue/ENG-42#comment-c1",
        "organizationId": "b7e1a4d2-9c3f-4e5a-8b6d-2f1e0d9c8b7a",
        "webhookTimestamp": now_ms(),
        "webhookId": "0d2f3e4a-5b6c-4d7e-8f9a-0b1c2d3e4f5a",
    }
    return {
        "assigned": linear_issue(
            "update", updated_from={"updatedAt": "2030-02-01T10:00:00.000Z", "assigneeId": None}
        ),
        "closed": linear_issue(
            "update",
            state="completed",
            updated_from={"stateId": "0a1b2c3d", "completedAt": None},
        ),
        "reopened": linear_issue(
            "update",
            state="unstarted",
            updated_from={"stateId": "9f8e7d6c", "completedAt": "2030-02-02T09:00:00.000Z"},
        ),
        "unassigned": linear_issue(
            "update", assignee=False, updated_from={"assigneeId": "5a4e5b3c"}
        ),
        "unrelated": (comment, "Comment"),
    }


# --- Jira: issue events (developer.atlassian.com, Webhooks) ---------------------------

_JIRA_ASSIGNEE = {
    "self": "https://acme.atlassian.net/rest/api/2/user?accountId=5b10ac8d82e05b22cc7d4ef5",
    "accountId": "5b10ac8d82e05b22cc7d4ef5",
    "displayName": "Knight Jira",
    "active": True,
    "timeZone": "Europe/Paris",
    "accountType": "atlassian",
}


def jira_issue(event: str, type_name: str, *, assignee=True, done=False, items=()):
    payload: dict[str, Any] = {
        "timestamp": int(dt.datetime.now(dt.UTC).timestamp() * 1000),
        "webhookEvent": event,
        "issue_event_type_name": type_name,
        "user": {
            "self": "https://acme.atlassian.net/rest/api/2/user?accountId=99",
            "accountId": "99",
            "displayName": "Lead",
        },
        "issue": {
            "id": "10007",
            "self": "https://acme.atlassian.net/rest/api/2/10007",
            "key": "PROJ-7",
            "fields": {
                "summary": "Renew the TLS certificate",
                "duedate": "2030-03-01",
                "assignee": _JIRA_ASSIGNEE if assignee else None,
                "status": {
                    "self": "https://acme.atlassian.net/rest/api/2/status/10001",
                    "name": "Done" if done else "To Do",
                    "id": "10001" if done else "10000",
                    "statusCategory": {
                        "id": 3 if done else 2,
                        "key": "done" if done else "new",
                        "name": "Done" if done else "To Do",
                    },
                },
                "project": {"id": "10000", "key": "PROJ", "name": "Project"},
            },
        },
    }
    if items:
        payload["changelog"] = {"id": "10100", "items": list(items)}
    return payload, ""


def jira_samples() -> dict[str, tuple[dict, str]]:
    assign = {
        "field": "assignee",
        "fieldtype": "jira",
        "fieldId": "assignee",
        "from": None,
        "fromString": None,
        "to": "5b10ac8d82e05b22cc7d4ef5",
        "toString": "Knight Jira",
    }
    unassign = {**assign, "from": assign["to"], "fromString": "Knight Jira", "to": None}
    unassign["toString"] = None
    closing = {
        "field": "status",
        "fieldtype": "jira",
        "fieldId": "status",
        "from": "10000",
        "fromString": "To Do",
        "to": "10001",
        "toString": "Done",
    }
    reopening = {
        "field": "resolution",
        "fieldtype": "jira",
        "fieldId": "resolution",
        "from": "10000",
        "fromString": "Done",
        "to": None,
        "toString": None,
    }
    project = {
        "timestamp": 1,
        "webhookEvent": "project_created",
        "project": {"id": 10001, "key": "NEW", "name": "New project"},
    }
    return {
        "assigned": jira_issue("jira:issue_updated", "issue_assigned", items=[assign]),
        "closed": jira_issue("jira:issue_updated", "issue_generic", done=True, items=[closing]),
        "reopened": jira_issue("jira:issue_updated", "issue_reopened", items=[reopening]),
        "unassigned": jira_issue(
            "jira:issue_updated", "issue_assigned", assignee=False, items=[unassign]
        ),
        "unrelated": (project, ""),
    }


def _user(login: str, user_id: int = 1) -> dict:
    return {
        "login": login,
        "id": user_id,
        "node_id": "MDQ6VXNlcjE=",
        "avatar_url": f"https://github.com/images/{login}.gif",
        "html_url": f"https://github.com/{login}",
        "type": "User",
        "site_admin": False,
    }


def issues_event(action: str, *, assignees: tuple[str, ...] = ("knight-gh",), **extra) -> dict:
    """An `issues` event as in GitHub's documentation (abridged to the fields
    GitHub always sends)."""
    people = [_user(login, n) for n, login in enumerate(assignees, start=10)]
    payload = {
        "action": action,
        "issue": {
            "url": "https://api.github.com/repos/acme/app/issues/123",
            "repository_url": "https://api.github.com/repos/acme/app",
            "html_url": "https://github.com/acme/app/issues/123",
            "id": 1,
            "node_id": "MDU6SXNzdWUx",
            "number": 123,
            "title": "Fix the login redirect",
            "user": _user("lead-gh", 2),
            "labels": [],
            "state": "closed" if action == "closed" else "open",
            "locked": False,
            "assignee": people[0] if people else None,
            "assignees": people,
            "milestone": {
                "url": "https://api.github.com/repos/acme/app/milestones/1",
                "html_url": "https://github.com/acme/app/milestone/1",
                "number": 1,
                "title": "v1.0",
                "state": "open",
                "due_on": "2030-03-01T08:00:00Z",
            },
            "comments": 0,
            "created_at": "2030-02-01T10:00:00Z",
            "updated_at": "2030-02-02T10:00:00Z",
            "closed_at": None,
            "author_association": "OWNER",
            "body": "It sends people to /home after signing in.",
        },
        "repository": {
            "id": 1296269,
            "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
            "name": "app",
            "full_name": "acme/app",
            "owner": _user("acme", 3),
            "private": False,
            "html_url": "https://github.com/acme/app",
        },
        "sender": _user("lead-gh", 2),
    }
    if action in ("assigned", "unassigned"):
        payload["assignee"] = people[0] if people else _user("knight-gh", 10)
    payload.update(extra)
    return payload
