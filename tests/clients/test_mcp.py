"""`commitments-mcp` as an assistant meets it: started as a real subprocess
(stdio, and streamable HTTP once) against the live server, driven by the `mcp`
SDK's own client. Its tools call the API through the generated client, so
what they do is in the database exactly as an inbox or sync call leaves it."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from audit.services import Actor
from commitments import services as commitment_services
from commitments.models import Commitment, EventKind, OutboxEvent, Status
from integrations import services as token_services
from notifications.models import NudgeDelivery
from relay import outbox
from tests.harness import mcp_client as mcp
from tests.harness.api import inbox_body

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

TOOLS = {"list_commitments", "get_commitment", "create_commitment", "complete_commitment"}


def token_with(user, *scopes: str) -> str:
    return token_services.api_token_mint(user=user, name="Assistant", scopes=scopes).plaintext


def the_round(session, assigner, assignee) -> None:
    """The tools' round: create (with its audit row and nudge), get, list, complete."""
    answer = session.answer("create_commitment", inbox_body(externalId="OPS-7"))
    commitment = Commitment.objects.get(pk=answer["id"])
    assert (commitment.assigner, commitment.assignee) == (assigner, assignee)
    assert commitment.status == Status.PENDING_HANDSHAKE
    assert (commitment.external_system, commitment.external_id) == ("jira", "OPS-7")
    event = AuditEvent.objects.for_object(commitment).get()
    assert event.actor_kind == "api_token" and event.user == assigner
    row = OutboxEvent.objects.get(commitment=commitment)
    assert row.kind == EventKind.HANDSHAKE_REQUESTED
    (delivery_id,) = outbox.outbox_event_dispatch(event_id=row.pk)  # as the worker would
    assert NudgeDelivery.objects.get(pk=delivery_id).recipient == assignee

    # The same reference again: a tool error that names the duplicate.
    duplicate = session.refusal("create_commitment", inbox_body(externalId="OPS-7"))
    assert "409 duplicate_external_ref" in duplicate
    assert "'jira'" in duplicate and "'OPS-7'" in duplicate
    assert "do not create it again" in duplicate

    got = session.answer("get_commitment", {"id": answer["id"]})
    assert got["id"] == answer["id"] and got["status"] == "Pending_Handshake"
    assert (got["assignerEmail"], got["assigneeEmail"]) == (
        "lead@example.com",
        "knight@example.com",
    )
    assert (got["externalSystem"], got["externalId"]) == ("jira", "OPS-7")
    assert [entry["status"] for entry in got["history"]] == ["Pending_Handshake"]
    assert got["history"][0]["actorKind"] == "api_token"

    listed = session.answer("list_commitments", {"externalSystem": "jira", "externalId": "OPS-7"})
    assert [row["id"] for row in listed["results"]] == [answer["id"]]
    assert listed["next"] is None and listed["nextCursor"] is None

    # Not accepted yet: completing says why and what comes first.
    reference = {"externalSystem": "jira", "externalId": "OPS-7"}
    early = session.refusal("complete_commitment", reference)
    assert "409 invalid_transition" in early and "accept" in early

    commitment_services.commitment_accept(
        actor=Actor.for_user(assignee), commitment_id=commitment.pk
    )
    done = session.answer("complete_commitment", reference)
    assert done["id"] == str(commitment.pk) and done["status"] == "Completed"
    commitment.refresh_from_db()
    assert commitment.status == Status.COMPLETED
    listed = session.answer("list_commitments", {"status": "Completed", "role": "assigner"})
    assert [row["id"] for row in listed["results"]] == [answer["id"]]


def test_over_stdio_the_four_tools_create_get_list_and_complete(live_server, assigner, assignee):
    token = token_with(assigner, "inbox", "sync", "read")
    with mcp.session(mcp.stdio_server(live_server.url, token)) as session:
        tools = session.tools()
        assert set(tools) == TOOLS
        assert tools["list_commitments"].annotations.read_only_hint is True
        the_round(session, assigner, assignee)


def test_a_read_only_token_lists_and_gets_and_its_create_is_refused_naming_the_scope(
    live_server, assigner, assignee
):
    mine = commitment_services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Water the plants",
        deadline=None,
    )
    token = token_with(assigner, "read")
    with mcp.session(mcp.stdio_server(live_server.url, token)) as session:
        listed = session.answer("list_commitments", {})
        got = session.answer("get_commitment", {"id": str(mine.pk)})
        text = session.refusal("create_commitment", inbox_body())
        done = session.refusal("complete_commitment", {"externalSystem": "j", "externalId": "1"})
    assert [row["id"] for row in listed["results"]] == [str(mine.pk)]
    assert got["description"] == "Water the plants" and got["externalId"] is None
    assert "403 forbidden" in text and "'inbox' scope" in text  # the API's own words
    assert "create_commitment needs a token with the `inbox` scope" in text
    assert "Settings, API tokens" in text
    assert "`sync` scope" in done
    assert Commitment.objects.count() == 1


def test_bad_arguments_are_refused_naming_the_field(live_server, assigner, outsider):
    theirs = commitment_services.commitment_create_pending(
        actor=Actor.for_user(outsider),
        assigner=outsider,
        assignee=outsider,
        description="Not yours",
        deadline=None,
    )
    token = token_with(assigner, "inbox", "sync", "read")
    with mcp.session(mcp.stdio_server(live_server.url, token)) as session:
        text = session.refusal("create_commitment", inbox_body(description=""))
        api = session.refusal("create_commitment", inbox_body(assigneeEmail="nobody@example.com"))
        limit = session.refusal("list_commitments", {"limit": 500})
        unknown = session.refusal("list_commitments", {"colour": "red"})
        bad_id = session.refusal("get_commitment", {"id": "OPS-7"})
        not_mine = session.refusal("get_commitment", {"id": str(theirs.pk)})
    assert "- description:" in text and "fix these arguments" in text
    assert "400 invalid_payload" in api and "- assigneeEmail:" in api
    assert "- limit:" in limit and "100" in limit
    assert "colour" in unknown
    assert "`id` must be a commitment's id" in bad_id
    assert "404 not_found" in not_mine and "list_commitments" in not_mine
    assert Commitment.objects.count() == 1


def test_over_streamable_http_too(live_server, assigner, assignee):
    token = token_with(assigner, "inbox", "sync", "read")
    with mcp.http_server(live_server.url, token) as url, mcp.session(url) as session:
        assert set(session.tools()) == TOOLS
        the_round(session, assigner, assignee)
