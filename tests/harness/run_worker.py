"""What `manage.py run_worker` would start, without starting it."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from relay.management.commands import run_worker


def supervisor_spec(monkeypatch: pytest.MonkeyPatch, *arguments: str) -> dict:
    """The spec `run_worker` with these arguments hands its supervisor
    (lib/supervise.py) as it execs it: its children's names and command
    lines, their niceness and idle policy. Nothing is started."""
    seen = {}

    def execv(path, argv):
        seen["spec"] = json.loads(argv[-1])
        raise SystemExit(0)

    monkeypatch.setattr(run_worker.os, "execv", execv)
    with pytest.raises(SystemExit):
        call_command("run_worker", *arguments)
    return seen["spec"]
