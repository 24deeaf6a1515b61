"""`commitments-mcp` as an assistant meets it: started as a real subprocess
(stdio, and streamable HTTP once) against the live server, driven by the `mcp`
SDK's own client. Its tools call the API through the generated client, so
what they do is in the database exactly as an inbox or sync call leaves it."""

from __future__ import annotations

import pytest
from commitments_mcp import schemas

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

TOOLS = {"create_commitment", "complete_commitment"}


def token_with(user, *scopes: str) -> str:
    return token_services.api_token_mint(user=user, name="Assistant", scopes=scopes).plaintext


def create_and_complete(session, assigner, assignee) -> None:
    """The tools' round: create (with its audit row and nudge), then complete."""
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


def test_over_stdio_the_tools_create_and_complete(live_server, assigner, assignee):
    token = token_with(assigner, "inbox", "sync")
    with mcp.session(mcp.stdio_server(live_server.url, token)) as session:
        tools = session.tools()
        assert set(tools) == TOOLS
        create_and_complete(session, assigner, assignee)


def test_the_input_schemas_are_the_apis(live_server, assigner):
    """Each tool's schema is the operation's own, from the served document."""
    token = token_with(assigner, "inbox", "sync")
    with mcp.session(mcp.stdio_server(live_server.url, token)) as session:
        tools = session.tools()
    create = tools["create_commitment"].input_schema
    assert create == schemas.request_body("inbox_create")
    assert set(create["required"]) == set(inbox_body())
    assert create["properties"]["deadline"]["type"] == ["string", "null"]
    complete = tools["complete_commitment"].input_schema
    assert set(complete["properties"]) == {"externalSystem", "externalId"}
    for tool in tools.values():
        assert tool.description and len(tool.description) > 80


def test_a_token_without_the_scope_is_refused_with_the_scope_named(live_server, assigner, assignee):
    token = token_with(assigner, "sync")
    with mcp.session(mcp.stdio_server(live_server.url, token)) as session:
        text = session.refusal("create_commitment", inbox_body())
    assert "403 forbidden" in text
    assert "`inbox` scope" in text and "Settings, API tokens" in text
    assert not Commitment.objects.exists()


def test_bad_arguments_are_refused_before_any_call_naming_the_field(live_server, assigner):
    token = token_with(assigner, "inbox", "sync")
    with mcp.session(mcp.stdio_server(live_server.url, token)) as session:
        text = session.refusal("create_commitment", inbox_body(description=""))
        api = session.refusal("create_commitment", inbox_body(assigneeEmail="nobody@example.com"))
    assert "- description:" in text and "fix these arguments" in text
    assert "400 invalid_payload" in api and "- assigneeEmail:" in api
    assert not Commitment.objects.exists()


def test_over_streamable_http_too(live_server, assigner, assignee):
    token = token_with(assigner, "inbox", "sync")
    with mcp.http_server(live_server.url, token) as url, mcp.session(url) as session:
        assert set(session.tools()) == TOOLS
        create_and_complete(session, assigner, assignee)
