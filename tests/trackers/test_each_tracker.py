"""GitLab, Linear and Jira connections end to end, through the HTTP stack:
deliveries shaped as each tracker's documentation shows them
(`payload_samples`), signed as each tracker signs: assigned, closed,
reopened, unassigned and an unrelated event; a redelivery; a bad signature."""

from __future__ import annotations

import datetime as dt
import json
import zoneinfo
from dataclasses import dataclass

import pytest

from audit.services import Actor
from commitments.models import Commitment, Status
from commitments.services import commitment_accept
from tests.harness import tracker_payloads as payload_samples
from tests.harness.trackers import connect, deliver, hmac_hex, hook_path, written
from trackers.models import TrackerEvent

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Tracker:
    kind: str
    login: str  # the assignee's identity field in the samples, mapped to knight@example.com
    key: str
    title: str
    url: str
    samples: object


TRACKERS = [
    Tracker(
        "gitlab",
        "knight-gl",
        "group/project#45",
        "New API: create/update/delete file",
        "https://gitlab.example.com/group/project/-/issues/45",
        payload_samples.gitlab_samples,
    ),
    Tracker(
        "linear",
        "5a4e5b3c-0b1a-4e0e-9d1c-3b2a1f0e9d8c",
        "ENG-42",
        "Write the onboarding guide",
        "https://linear.app/acme/issue/ENG-42/write-the-onboarding-guide",
        payload_samples.linear_samples,
    ),
    Tracker(
        "jira",
        "5b10ac8d82e05b22cc7d4ef5",
        "PROJ-7",
        "Renew the TLS certificate",
        "https://acme.atlassian.net/browse/PROJ-7",
        payload_samples.jira_samples,
    ),
]


@pytest.fixture(params=TRACKERS, ids=[t.kind for t in TRACKERS])
def tracker(request):
    return request.param


@pytest.fixture
def wired(tracker, assigner, assignee):
    assigner.timezone = "America/New_York"
    assigner.save(update_fields=["timezone"])
    connection, secret = connect(assigner, tracker.kind)
    connection.identity_map = {tracker.login: "knight@example.com"}
    connection.save()
    return connection, secret


def send(client, wired, tracker, name, **kwargs):
    payload, event = tracker.samples()[name]
    connection, secret = wired
    return deliver(client, connection, secret, payload, event=event, **kwargs)


def test_assigned_creates_the_commitment_with_the_issues_fields(client, tracker, wired, assignee):
    response = send(client, wired, tracker, "assigned")
    assert response.status_code == 200, response.content
    commitment = Commitment.objects.get()
    connection = wired[0]
    assert commitment.assignee == assignee
    assert commitment.status == Status.PENDING_HANDSHAKE
    assert commitment.description == tracker.title
    assert commitment.external_system == tracker.kind == connection.system
    assert commitment.external_id == tracker.key
    assert commitment.link_url == tracker.url
    new_york = zoneinfo.ZoneInfo("America/New_York")
    assert commitment.deadline == dt.datetime(2030, 3, 1, 23, 59, 59, tzinfo=new_york)
    assert TrackerEvent.objects.get().outcome == "changed"


def test_closed_completes_the_accepted_commitment(client, tracker, wired, assignee):
    send(client, wired, tracker, "assigned")
    commitment = Commitment.objects.get()
    commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    response = send(client, wired, tracker, "closed")
    assert response.status_code == 200, response.content
    commitment.refresh_from_db()
    assert commitment.status == Status.COMPLETED
    assert response.json()["actions"][0]["did"] == "completed"


def test_closed_leaves_an_unaccepted_commitment_and_records_it(client, tracker, wired):
    send(client, wired, tracker, "assigned")
    response = send(client, wired, tracker, "closed")
    assert response.status_code == 202
    assert Commitment.objects.get().status == Status.PENDING_HANDSHAKE
    assert "not accepted yet" in TrackerEvent.objects.first().summary


@pytest.mark.parametrize("name", ["reopened", "unassigned", "unrelated"])
def test_other_events_are_202_and_recorded(client, tracker, wired, name):
    send(client, wired, tracker, "assigned")
    before = Commitment.objects.values_list("status", flat=True).get()
    response = send(client, wired, tracker, name)
    assert response.status_code == 202, response.content
    assert response.json()["changed"] is False
    assert response.json()["summary"]
    assert Commitment.objects.values_list("status", flat=True).get() == before
    assert TrackerEvent.objects.count() == 2


def test_a_redelivery_changes_nothing(client, tracker, wired):
    assert send(client, wired, tracker, "assigned", delivery="same-id").status_code == 200
    before = written()
    response = send(client, wired, tracker, "assigned", delivery="same-id")
    assert response.status_code == 202
    assert response.json()["redelivery"] is True
    assert written() == before


def test_a_missing_signature_writes_nothing(client, tracker, wired):
    payload, event = tracker.samples()["assigned"]
    before = written()
    response = deliver(client, wired[0], None, payload, event=event)
    assert response.status_code == 401
    assert response.json() == {"error": "unauthorized", "message": response.json()["message"]}
    assert written() == before


def test_a_wrong_signature_writes_nothing(client, tracker, wired):
    payload, event = tracker.samples()["assigned"]
    before = written()
    response = deliver(client, wired[0], "the-wrong-secret", payload, event=event)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert written() == before


def test_a_body_changed_after_signing_is_refused(client, tracker, wired):
    if tracker.kind == "gitlab":
        pytest.skip("GitLab sends the secret itself, not a signature of the body")
    payload, event = tracker.samples()["assigned"]
    connection, secret = wired
    signed = json.dumps(payload).encode()
    tampered = signed.replace(b"2030-03-01", b"2031-03-01")
    header = {"linear": "Linear-Signature", "jira": "X-Hub-Signature"}[tracker.kind]
    value = hmac_hex(secret, signed)
    value = value if tracker.kind == "linear" else "sha256=" + value
    response = deliver(
        client, connection, None, None, body=tampered, event=event, **{header: value}
    )
    assert response.status_code == 401
    assert Commitment.objects.count() == 0


# --- one tracker's own rules ----------------------------------------------------------


@pytest.mark.parametrize("tracker", [TRACKERS[1]], ids=["linear"], indirect=False)
def test_linear_refuses_a_stale_timestamp(client, tracker, wired):
    payload, event = tracker.samples()["assigned"]
    payload["webhookTimestamp"] -= 61_000
    before = written()
    response = deliver(client, wired[0], wired[1], payload, event=event)
    assert response.status_code == 401
    assert "webhookTimestamp" in response.json()["message"]
    assert written() == before


@pytest.mark.parametrize("tracker", [TRACKERS[1]], ids=["linear"])
def test_linear_the_operators_map_wins_over_the_payloads_email(client, tracker, wired, make_user):
    make_user("squire@example.com")
    payload, event = tracker.samples()["assigned"]
    # Linear always sends the user's address; the person's address here differs.
    payload["data"]["assignee"]["email"] = "Squire@Example.com"
    assert deliver(client, wired[0], wired[1], payload, event=event).status_code == 200
    assert Commitment.objects.get().assignee.email == "knight@example.com"


@pytest.mark.parametrize("tracker", [TRACKERS[1]], ids=["linear"])
def test_linear_an_unmapped_user_is_found_by_the_payloads_email(client, tracker, wired, make_user):
    squire = make_user("squire@example.com")
    wired[0].identity_map = {}
    wired[0].save()
    payload, event = tracker.samples()["assigned"]
    payload["data"]["assignee"]["email"] = "Squire@Example.com"
    assert deliver(client, wired[0], wired[1], payload, event=event).status_code == 200
    assert Commitment.objects.get().assignee == squire


@pytest.mark.parametrize("tracker", [TRACKERS[0]], ids=["gitlab"])
def test_gitlab_falls_back_to_the_event_uuid(client, tracker, wired):
    payload, event = tracker.samples()["assigned"]
    connection, secret = wired
    raw = json.dumps(payload).encode()
    headers = {
        "X-Gitlab-Event": event,
        "X-Gitlab-Token": secret,
        "X-Gitlab-Event-UUID": "13792a34-cac6-4fda-95a8-c58e00a3954e",
    }
    for _ in range(2):
        client.post(
            hook_path(connection), data=raw, content_type="application/json", headers=headers
        )
    assert TrackerEvent.objects.get().delivery_id == "13792a34-cac6-4fda-95a8-c58e00a3954e"
    assert Commitment.objects.count() == 1


@pytest.mark.parametrize("tracker", [TRACKERS[0]], ids=["gitlab"])
def test_gitlab_opened_with_two_assignees_makes_two(client, tracker, wired, make_user):
    make_user("squire@example.com")
    connection, secret = wired
    connection.identity_map["squire-gl"] = "squire@example.com"
    connection.save()
    payload, event = payload_samples.gitlab_issue("open", assignees=("knight-gl", "squire-gl"))
    assert deliver(client, connection, secret, payload, event=event).status_code == 200
    assert Commitment.objects.count() == 2


@pytest.mark.parametrize("tracker", [TRACKERS[2]], ids=["jira"])
def test_jira_an_issue_created_with_an_assignee_is_assigned(client, tracker, wired):
    payload, event = payload_samples.jira_issue("jira:issue_created", "issue_created")
    assert deliver(client, wired[0], wired[1], payload, event=event).status_code == 200
    assert Commitment.objects.get().external_id == "PROJ-7"


def test_a_body_that_is_not_json_is_recorded_and_202(client, tracker, wired):
    connection, secret = wired
    if tracker.kind == "linear":
        pytest.skip("Linear's timestamp is inside the body: no timestamp, 401")
    raw = b"not json"
    response = deliver(client, connection, secret, None, body=raw)
    assert response.status_code == 202
    assert "not JSON" in TrackerEvent.objects.get().summary
