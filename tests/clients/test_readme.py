"""clients/python/README.md is true: its Python examples run, in order, in one
namespace, against the live server, as the README's reader would run them
(COMMITMENTS_URL and COMMITMENTS_TOKEN set, the addresses it uses signed up).
Between the sections the test does what a person does in the web interface
(the assignee accepts)."""

from __future__ import annotations

import re

import pytest

from audit.services import Actor
from commitments import services as commitment_services
from commitments.models import Commitment, Status
from integrations import services as token_services
from tests.harness.tree import ROOT

README = ROOT / "clients" / "python" / "README.md"
BLOCK = re.compile(r"^## (.+?)$|^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def examples() -> list[tuple[str, str]]:
    """(section heading, code) for each Python block, in order."""
    found, section = [], ""
    for match in BLOCK.finditer(README.read_text()):
        if match.group(1):
            section = match.group(1)
        else:
            found.append((section, match.group(2)))
    return found


def test_the_readme_has_an_example_for_each_thing_it_shows():
    sections = [section for section, _ in examples()]
    for wanted in (
        "Connect",
        "Create a commitment",
        "Complete it",
        "Get one",
        "List, page by page",
        "Errors",
    ):
        assert wanted in sections, sections


@pytest.mark.django_db(transaction=True)
def test_every_example_runs_against_the_live_server(
    live_server, assigner, assignee, monkeypatch, capsys
):
    monkeypatch.setenv("COMMITMENTS_URL", live_server.url)
    monkeypatch.setenv(
        "COMMITMENTS_TOKEN",
        token_services.api_token_mint(
            user=assigner, name="README", scopes=["inbox", "sync", "read"]
        ).plaintext,
    )
    namespace: dict = {"__name__": "readme"}
    for section, code in examples():
        exec(compile(code, f"{README}: {section}", "exec"), namespace)
        if section == "Create a commitment":
            commitment = Commitment.objects.get(pk=namespace["created"].id)
            assert commitment.status == Status.PENDING_HANDSHAKE
            assert commitment.assignee == assignee and commitment.external_id == "OPS-42"
            commitment_services.commitment_accept(
                actor=Actor.for_user(assignee), commitment_id=commitment.pk
            )
        if section == "Complete it":
            assert Commitment.objects.get(external_id="OPS-42").status == Status.COMPLETED
        if section == "Get one":
            assert namespace["commitment"].id == namespace["created"].id
            # Two more, made in the web interface, for the list to page through.
            for description in ("Water the plants", "Book the venue"):
                commitment_services.commitment_create_pending(
                    actor=Actor.for_user(assigner),
                    assigner=assigner,
                    assignee=assignee,
                    description=description,
                    deadline=None,
                )
        if section == "List, page by page":
            assert [c.description for c in namespace["mine"]] == [
                "Book the venue",
                "Water the plants",
                "Ship the quarterly report",
            ]
    out = capsys.readouterr().out
    assert "409 duplicate_external_ref" in out
    assert "assigneeEmail:" in out and "unreachable: ConnectError" in out
    assert "Completed jira OPS-42" in out and "Pending_Handshake -> Active user" in out
    assert "3 commitments" in out
    assert Commitment.objects.count() == 3
