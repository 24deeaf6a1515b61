"""A tracker connection's changes have the inbox's and sync's side effects:
the assignee is asked (a nudge), the outbound webhook of a completion names
the connection in the contract's terms, and the assigner's nudge says where
the completion came from."""

from __future__ import annotations

import pytest

from audit.services import Actor
from commitments.models import Commitment, OutboxEvent
from commitments.services import commitment_accept
from notifications.nudges import nudge_message, nudge_recipients
from tests.harness.tracker_payloads import issues_event
from tests.harness.trackers import connect, deliver
from webhooks.payloads import event_envelope

pytestmark = pytest.mark.django_db


@pytest.fixture
def completed(client, assigner, assignee):
    connection, secret = connect(assigner, "github", **{"knight-gh": "knight@example.com"})
    deliver(client, connection, secret, issues_event("assigned"))
    commitment = Commitment.objects.get()
    commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    deliver(client, connection, secret, issues_event("closed"))
    return connection, OutboxEvent.objects.get(commitment=commitment, kind="completed")


def test_the_assignee_is_nudged_for_the_handshake(client, assigner, assignee):
    connection, secret = connect(assigner, "github", **{"knight-gh": "knight@example.com"})
    deliver(client, connection, secret, issues_event("assigned"))
    asked = OutboxEvent.objects.get(kind="handshake_requested")
    assert nudge_recipients(asked) == [assignee]
    assert "Fix the login redirect" in nudge_message(event=asked, recipient=assignee).text


def test_the_outbound_webhook_reports_the_connection_as_a_token(completed):
    connection, event = completed
    actor = event_envelope(event, event_name="commitment.completed")["actor"]
    assert actor == {
        "kind": "api_token",
        "userId": str(connection.owner_id),
        "tokenId": str(connection.pk),
    }


def test_the_assigners_nudge_says_the_tracker_completed_it(completed, assigner):
    _connection, event = completed
    assert nudge_recipients(event) == [assigner]
    text = nudge_message(event=event, recipient=assigner).text
    assert "github (through a tracker connection)" in text
