"""A delivery as it comes off the wire: GitHub's form encoding, bodies larger
than the API's 1 MiB (read streamed, verified as they arrive, spooled), an
authentic body over the trackers' limit (a row that says why), and a captured
body replayed under a fresh delivery id (refused, nothing written)."""

from __future__ import annotations

import json

import pytest

from audit.services import Actor
from commitments.models import Commitment, Status
from commitments.services import commitment_accept
from tests.harness.tracker_payloads import gitlab_issue, issues_event, jira_samples
from tests.harness.trackers import FORM, connect, deliver, form_body, hmac_hex, written
from trackers.models import TrackerEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def github(assigner, assignee):
    return connect(assigner, "github", system="acme", **{"knight-gh": "knight@example.com"})


# --- GitHub's default content type: application/x-www-form-urlencoded ----------------


def test_a_form_encoded_ping_is_read(client, github):
    connection, secret = github
    ping = {"zen": "Keep it logically awesome.", "hook_id": 1, "hook": {"type": "Repository"}}
    response = deliver(
        client, connection, secret, None, event="ping", body=form_body(ping), content_type=FORM
    )
    assert response.status_code == 202, response.content
    assert response.json()["event"] == "ping"
    assert "the connection works" in response.json()["summary"]
    assert TrackerEvent.objects.get().event == "ping"


def test_a_form_encoded_issue_event_creates_and_completes(client, github, assignee):
    connection, secret = github
    response = deliver(
        client,
        connection,
        secret,
        None,
        body=form_body(issues_event("assigned")),
        content_type=FORM,
    )
    assert response.status_code == 200, response.content
    commitment = Commitment.objects.get()
    assert (commitment.assignee, commitment.external_id) == (assignee, "acme/app#123")
    assert commitment.description == "Fix the login redirect"
    commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    closed = issues_event("closed")
    response = deliver(client, connection, secret, None, body=form_body(closed), content_type=FORM)
    assert response.status_code == 200, response.content
    commitment.refresh_from_db()
    assert commitment.status == Status.COMPLETED


def test_a_form_body_keeps_non_ascii_titles(client, github):
    connection, secret = github
    payload = issues_event("assigned")
    payload["issue"]["title"] = "Исправить вход — añadir la validación"
    response = deliver(client, connection, secret, None, body=form_body(payload), content_type=FORM)
    assert response.status_code == 200, response.content
    assert Commitment.objects.get().description == "Исправить вход — añadir la validación"


def test_the_form_signature_is_over_the_raw_body_not_the_json(client, github):
    connection, secret = github
    raw = form_body(issues_event("assigned"))
    signed_json = "sha256=" + hmac_hex(secret, json.dumps(issues_event("assigned")).encode())
    response = deliver(
        client,
        connection,
        None,
        None,
        body=raw,
        content_type=FORM,
        **{"X-Hub-Signature-256": signed_json},
    )
    assert response.status_code == 401
    assert written()[3] == 0


@pytest.mark.parametrize(
    "body, why",
    [
        (b"zen=hello", "no single payload field"),
        (b"payload=%7Bnot-json", "not JSON"),
        (b"payload=%FF%FE", "not a URL-encoded form"),
    ],
)
def test_a_form_without_a_json_payload_is_logged_and_answered_202(client, github, body, why):
    connection, secret = github
    response = deliver(client, connection, secret, None, body=body, content_type=FORM)
    assert response.status_code == 202
    assert why in response.json()["summary"]
    assert why in TrackerEvent.objects.get().summary
    assert Commitment.objects.count() == 0


# --- a body replayed under a fresh delivery id -----------------------------------------


def test_a_captured_github_delivery_replayed_with_a_fresh_id_does_nothing(client, github, assignee):
    connection, secret = github
    deliver(client, connection, secret, issues_event("assigned"), delivery="d-1")
    commitment = Commitment.objects.get()
    commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    before = written()
    # The same signed body, a delivery id the attacker chose.
    again = deliver(client, connection, secret, issues_event("assigned"), delivery="forged-2")
    assert again.status_code == 202
    assert again.json()["redelivery"] is True
    assert "This body was received before, as delivery d-1" in again.json()["summary"]
    assert written() == before


def test_a_captured_jira_close_replayed_with_a_fresh_id_writes_nothing(client, assigner, assignee):
    connection, secret = connect(
        assigner, "jira", **{"5b10ac8d82e05b22cc7d4ef5": "knight@example.com"}
    )
    samples = jira_samples()
    deliver(client, connection, secret, samples["assigned"][0])
    commitment = Commitment.objects.get()
    commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    closing = samples["closed"][0]
    assert deliver(client, connection, secret, closing).status_code == 200
    before = written()
    replay = deliver(client, connection, secret, closing)  # a fresh identifier
    assert replay.status_code == 202
    assert replay.json()["redelivery"] is True
    assert written() == before


def test_a_different_body_under_a_fresh_id_is_a_new_delivery(client, github):
    connection, secret = github
    deliver(client, connection, secret, issues_event("labeled"))
    other = deliver(client, connection, secret, issues_event("unlabeled"))
    assert other.json()["redelivery"] is False
    assert TrackerEvent.objects.count() == 2
    assert all(len(e.body_sha256) == 64 for e in TrackerEvent.objects.all())


# --- sizes -----------------------------------------------------------------------------


def test_a_gitlab_issue_with_a_megabyte_description_arrives(client, assigner, assignee):
    connection, secret = connect(assigner, "gitlab", **{"knight-gl": "knight@example.com"})
    payload, event = gitlab_issue("open")
    payload["object_attributes"]["description"] = "Steps to reproduce. " * 80_000  # 1.6 MB
    body = json.dumps(payload).encode()
    assert len(body) > 1024 * 1024
    response = deliver(client, connection, secret, None, body=body, event=event)
    assert response.status_code == 200, response.content
    assert Commitment.objects.get().external_id == "group/project#45"


def test_a_large_github_body_is_verified_as_it_is_read(client, github):
    connection, secret = github
    payload = issues_event("assigned")
    payload["issue"]["body"] = "x" * (3 * 1024 * 1024)
    response = deliver(client, connection, secret, payload)
    assert response.status_code == 200, response.content
    # One byte changed after signing: refused, nothing written.
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac_hex(secret, body)
    tampered = body[:-10] + b"y" + body[-9:]
    response = deliver(
        client, connection, None, None, body=tampered, **{"X-Hub-Signature-256": signature}
    )
    assert response.status_code == 401


def test_an_authentic_body_over_the_limit_leaves_a_row_saying_why(client, github, settings):
    settings.TRACKER_MAX_BODY_BYTES = 8192
    connection, secret = github
    payload = issues_event("assigned")
    payload["issue"]["body"] = "x" * 10_000
    size = len(json.dumps(payload).encode())
    response = deliver(client, connection, secret, payload, delivery="big-1")
    assert response.status_code == 202, response.content
    summary = response.json()["summary"]
    assert f"the body is {size:,} bytes, over the limit of 8,192 bytes" in summary
    row = TrackerEvent.objects.get()
    assert (row.delivery_id, row.outcome, row.summary) == ("big-1", "nothing", summary)
    assert Commitment.objects.count() == 0
    # The same body again, under another id: received before.
    again = deliver(client, connection, secret, payload, delivery="big-2")
    assert again.json()["redelivery"] is True
    assert TrackerEvent.objects.count() == 1


def test_a_forged_body_over_the_limit_is_401_and_leaves_nothing(client, github, settings):
    settings.TRACKER_MAX_BODY_BYTES = 8192
    connection, _secret = github
    payload = issues_event("assigned")
    payload["issue"]["body"] = "x" * 10_000
    before = written()
    response = deliver(client, connection, "not-the-secret", payload)
    assert response.status_code == 401
    assert written() == before


def test_a_body_too_large_to_verify_is_413_and_leaves_nothing(client, github, settings):
    settings.TRACKER_MAX_BODY_BYTES = 1024
    connection, secret = github
    payload = issues_event("assigned")
    payload["issue"]["body"] = "x" * 5000  # over 4 x the limit: not read to its end
    before = written()
    response = deliver(client, connection, secret, payload)
    assert response.status_code == 413
    assert response.json()["error"] == "payload_too_large"
    assert written() == before


def test_gitlab_over_the_limit_is_judged_by_its_token_without_reading(client, assigner, settings):
    settings.TRACKER_MAX_BODY_BYTES = 4096
    connection, secret = connect(assigner, "gitlab", **{"knight-gl": "knight@example.com"})
    payload, event = gitlab_issue("open")
    payload["object_attributes"]["description"] = "y" * 100_000
    wrong = deliver(client, connection, "not-the-token", payload, event=event)
    assert wrong.status_code == 401
    assert TrackerEvent.objects.count() == 0
    right = deliver(client, connection, secret, payload, event=event, delivery="gl-big")
    assert right.status_code == 202
    assert "more than 4,096 bytes, over the limit" in right.json()["summary"]
    assert TrackerEvent.objects.get().delivery_id == "gl-big"


def test_the_inbox_keeps_its_one_mib_limit(client):
    # The contract's limit, decided before the token (tests/integrations/test_errors.py).
    body = b"{" + b" " * (1024 * 1024) + b"}"
    response = client.post("/api/v1/inbox", data=body, content_type="application/json")
    assert response.status_code == 413
