"""The committed client (clients/python/commitments_client) is what the pinned
generator makes from the OpenAPI document the live server serves: the test
runs the generator script against the server into a temporary folder and
compares every file. A change to the API without a regenerated client fails
here, with the command that fixes it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.tree import ROOT

COMMITTED = ROOT / "clients" / "python" / "commitments_client"
SKIPPED = {"__pycache__"}


def files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not SKIPPED & set(path.relative_to(root).parts)
    }


@pytest.mark.django_db(transaction=True)
def test_the_committed_client_is_what_the_served_document_generates(live_server, tmp_path):
    out = tmp_path / "commitments_client"
    result = subprocess.run(
        [sys.executable, "scripts/generate_client.py", "--url", live_server.url, "--out", out],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    fresh, committed = files(out), files(COMMITTED)
    assert "openapi.json" in fresh and "client.py" in fresh
    changed = sorted(
        name for name in fresh.keys() | committed.keys() if fresh.get(name) != committed.get(name)
    )
    assert not changed, (
        f"the committed client differs from the served document's in {changed}: "
        "run `.venv/bin/python scripts/generate_client.py` and commit the result"
    )


def test_the_generator_is_pinned_exactly():
    """The output is committed, so the generator that makes it is one version."""
    lock = (ROOT / "requirements-dev.lock").read_text()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"openapi-python-client==' in pyproject
    assert "\nopenapi-python-client==" in lock
