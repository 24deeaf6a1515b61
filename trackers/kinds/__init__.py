"""The registry of tracker kinds: each kind's name (`Kind`, stored on the
connection) and its one class (`trackers.kinds.github` ...), where everything
the service knows of that tracker lives. This is the one module that names a
kind by its string; everything else asks `tracker_for(connection.kind)` and
uses what the class says (tests/trackers/test_registry.py keeps it so).

To add a tracker: a `Tracker` subclass in a module of its own, a `Kind`, and
its line in `TRACKERS`.
"""

from __future__ import annotations

from django.db import models

from trackers.kinds.base import Tracker
from trackers.kinds.github import GitHub
from trackers.kinds.gitlab import GitLab
from trackers.kinds.jira import Jira
from trackers.kinds.linear import Linear


class Kind(models.TextChoices):
    GITHUB = "github", "GitHub"
    GITLAB = "gitlab", "GitLab"
    LINEAR = "linear", "Linear"
    JIRA = "jira", "Jira"


TRACKERS: dict[str, Tracker] = {
    Kind.GITHUB: GitHub(),
    Kind.GITLAB: GitLab(),
    Kind.LINEAR: Linear(),
    Kind.JIRA: Jira(),
}


def tracker_for(kind: str) -> Tracker:
    """The class of the tracker `kind` names (a `Kind` value)."""
    return TRACKERS[kind]


__all__ = ["TRACKERS", "Kind", "Tracker", "tracker_for"]
