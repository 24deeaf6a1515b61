"""A GitHub connection end to end, through the HTTP stack: issues events shaped
as GitHub's webhook documentation shows them, signed as GitHub signs
(`X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body>`)."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from django.db import connection as db_connection
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from audit.services import Actor
from commitments.models import Commitment, OutboxEvent, Status
from commitments.services import commitment_accept
from tests.harness.tracker_payloads import issues_event
from tests.harness.trackers import connect, deliver, written
from trackers.models import TrackerEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def github(assigner, assignee):
    assigner.timezone = "Europe/Paris"
    assigner.save(update_fields=["timezone"])
    return connect(assigner, "github", system="acme", **{"knight-gh": "knight@example.com"})


def test_an_assigned_issue_becomes_a_commitment_for_the_mapped_assignee(client, github, assignee):
    connection, secret = github
    response = deliver(client, connection, secret, issues_event("assigned"))
    assert response.status_code == 200, response.content
    assert response.json()["changed"] is True
    commitment = Commitment.objects.get()
    assert commitment.assignee == assignee
    assert commitment.assigner == connection.owner
    assert commitment.status == Status.PENDING_HANDSHAKE
    assert commitment.description == "Fix the login redirect"
    assert (commitment.external_system, commitment.external_id) == ("acme", "acme/app#123")
    assert commitment.link_url == "https://github.com/acme/app/issues/123"
    # The milestone's due date, at the end of that day in the owner's time zone.
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    assert commitment.deadline == dt.datetime(2030, 3, 1, 23, 59, 59, tzinfo=paris)
    # The inbox's side effects: the audit row names the connection, the outbox asks.
    created = AuditEvent.objects.get(action="created", subject_id=commitment.pk)
    assert created.actor_kind == "tracker"
    assert created.token_id == connection.pk
    assert created.token_name == "GitHub connection “acme”"
    assert OutboxEvent.objects.get(commitment=commitment).kind == "handshake_requested"
    event = TrackerEvent.objects.get()
    assert (event.event, event.external_id, event.outcome) == (
        "issues.assigned",
        "acme/app#123",
        "changed",
    )


def test_the_commitment_page_links_the_issue_and_names_the_connection(client, github, assignee):
    from commitments.links import link_template_add

    connection, secret = github
    deliver(client, connection, secret, issues_event("assigned"))
    commitment = Commitment.objects.get()
    # The issue's own link wins over a link template for the system.
    link_template_add(owner=assignee, system="acme", template="https://x.example/{externalId}")
    client.force_login(assignee)
    page = client.get(f"/commitments/{commitment.pk}").content.decode()
    assert 'href="https://github.com/acme/app/issues/123"' in page
    assert "x.example" not in page
    assert "via GitHub connection “acme”" in page


def test_closing_the_issue_completes_an_active_commitment(client, github, assignee):
    connection, secret = github
    deliver(client, connection, secret, issues_event("assigned"))
    commitment = Commitment.objects.get()
    commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    response = deliver(client, connection, secret, issues_event("closed"))
    assert response.status_code == 200
    commitment.refresh_from_db()
    assert commitment.status == Status.COMPLETED
    assert OutboxEvent.objects.filter(commitment=commitment, kind="completed").count() == 1


def test_closing_an_unaccepted_commitment_leaves_it_and_says_why(client, github):
    connection, secret = github
    deliver(client, connection, secret, issues_event("assigned"))
    response = deliver(client, connection, secret, issues_event("closed"))
    assert response.status_code == 202
    assert "not accepted yet" in response.json()["summary"]
    assert Commitment.objects.get().status == Status.PENDING_HANDSHAKE
    assert TrackerEvent.objects.filter(event="issues.closed", outcome="nothing").count() == 1


def test_a_redelivery_changes_nothing_and_says_so(client, github):
    connection, secret = github
    first = deliver(client, connection, secret, issues_event("assigned"), delivery="d-1")
    assert first.status_code == 200
    before = written()
    again = deliver(client, connection, secret, issues_event("assigned"), delivery="d-1")
    assert again.status_code == 202
    assert again.json()["redelivery"] is True
    assert "received before" in again.json()["summary"]
    assert written() == before


@pytest.mark.parametrize(
    "signature",
    [None, "sha256=" + "0" * 64, "sha1=abc", "sha256=", "garbage"],
    ids=["missing", "wrong", "other-algorithm", "empty", "garbage"],
)
def test_a_missing_or_wrong_signature_is_401_and_writes_nothing(client, github, signature):
    connection, _secret = github
    before = written()
    headers = {} if signature is None else {"X-Hub-Signature-256": signature}
    response = deliver(client, connection, None, issues_event("assigned"), **headers)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert written() == before


def test_a_body_signed_with_another_secret_is_refused(client, github):
    connection, _secret = github
    response = deliver(client, connection, "not-the-secret", issues_event("assigned"))
    assert response.status_code == 401
    assert Commitment.objects.count() == 0


def test_an_unknown_hook_address_is_401(client, github):
    connection, secret = github
    connection.hook_id = "nobody-has-this"
    response = deliver(client, connection, secret, issues_event("assigned"))
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"


def test_a_rotated_secret_stops_the_old_one(client, github):
    from trackers.services import tracker_connection_rotate_secret

    connection, old = github
    new = tracker_connection_rotate_secret(connection=connection)
    assert deliver(client, connection, old, issues_event("assigned")).status_code == 401
    assert deliver(client, connection, new, issues_event("assigned")).status_code == 200


@pytest.mark.parametrize("action", ["reopened", "unassigned", "labeled"])
def test_other_issue_actions_are_202_and_recorded(client, github, action):
    connection, secret = github
    response = deliver(client, connection, secret, issues_event(action))
    assert response.status_code == 202
    assert response.json()["changed"] is False
    assert response.json()["summary"]
    assert Commitment.objects.count() == 0
    assert TrackerEvent.objects.get().event == f"issues.{action}"


def test_an_unrelated_event_is_202(client, github):
    connection, secret = github
    push = {"ref": "refs/heads/main", "before": "0" * 40, "after": "1" * 40, "commits": []}
    response = deliver(client, connection, secret, push, event="push")
    assert response.status_code == 202
    assert "only issues events" in response.json()["summary"]
    assert Commitment.objects.count() == 0


def test_an_unmapped_assignee_is_202_with_the_reason(client, github):
    connection, secret = github
    response = deliver(
        client, connection, secret, issues_event("assigned", assignees=("stranger",))
    )
    assert response.status_code == 202
    [action] = response.json()["actions"]
    assert action["who"] == "stranger"
    assert action["did"] == "skipped"
    assert "identity map" in action["why"]
    assert Commitment.objects.count() == 0


def test_several_assignees_get_one_commitment_each(client, github, make_user):
    connection, secret = github
    make_user("squire@example.com")
    connection.identity_map["Squire-GH"] = "squire@example.com"
    connection.save()
    payload = issues_event("opened", assignees=("knight-gh", "squire-gh", "stranger"))
    response = deliver(client, connection, secret, payload)
    assert response.status_code == 200
    ids = sorted(Commitment.objects.values_list("external_id", flat=True))
    assert ids == ["acme/app#123", "acme/app#123 (squire@example.com)"]
    did = [a["did"] for a in response.json()["actions"]]
    assert did == ["created", "created", "skipped"]
    # Both are completed by the close, once accepted.
    for commitment in Commitment.objects.all():
        commitment_accept(actor=Actor.for_user(commitment.assignee), commitment_id=commitment.pk)
    deliver(client, connection, secret, issues_event("closed"))
    assert set(Commitment.objects.values_list("status", flat=True)) == {Status.COMPLETED}


def test_assigning_again_keeps_the_one_commitment(client, github):
    connection, secret = github
    deliver(client, connection, secret, issues_event("assigned"))
    # A later assignment: GitHub's body differs at least by the sender or time.
    again = issues_event("assigned", sender={"login": "other-lead", "id": 4})
    response = deliver(client, connection, secret, again)
    assert response.status_code == 202
    assert response.json()["actions"][0]["did"] == "kept"
    assert Commitment.objects.count() == 1


def test_query_counts_of_a_hook_call(client, github):
    connection, secret = github
    payload = issues_event("assigned")
    with CaptureQueriesContext(db_connection) as first:
        response = deliver(client, connection, secret, payload, delivery="q-1")
    assert response.status_code == 200
    sql = [q["sql"] for q in first]
    # The connection; the event row (in a savepoint); the issue's commitments;
    # the assignee; the inbox path (commitment, audit row, outbox row, in a
    # savepoint); the event row's result; the transactions' own statements.
    assert len(sql) <= 15, sql
    with CaptureQueriesContext(db_connection) as again:
        deliver(client, connection, secret, payload, delivery="q-1")
    sql = [q["sql"] for q in again]
    # A redelivery: the connection, the refused insert (savepoint) and the first row.
    assert len(sql) <= 8, sql


def test_the_signature_is_checked_before_the_body_is_read(client, github):
    connection, _secret = github
    before = written()
    response = deliver(client, connection, "wrong", None, body=b"{not json")
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert written() == before


def test_a_deactivated_owners_connection_is_refused(client, github):
    connection, secret = github
    connection.owner.is_active = False
    connection.owner.save(update_fields=["is_active"])
    response = deliver(client, connection, secret, issues_event("assigned"))
    assert response.status_code == 401
    assert Commitment.objects.count() == 0
    assert TrackerEvent.objects.count() == 0


def test_an_issue_without_a_title_is_refused_by_the_terms_rule(client, github, assignee):
    """The contract's rule of a description (commitments.terms) is the one a
    delivery meets: an issue with a blank title makes no commitment, and the
    log says which rule refused it, in the inbox's words."""
    connection, secret = github
    event = issues_event("assigned")
    event["issue"]["title"] = " \u00a0 "
    response = deliver(client, connection, secret, event)
    assert response.status_code == 202, response.content
    [action] = response.json()["actions"]
    assert action["did"] == "skipped"
    assert action["why"] == "description: This field may not be blank."
    assert action["email"] == "knight@example.com"
    assert not Commitment.objects.exists()
    assert TrackerEvent.objects.get().actions == [action]
