"""POST /api/v1/sync: complete a commitment by its external reference, among the
token owner's own commitments as assigner (docs/api.md, "POST /api/v1/sync")."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import Actor
from commitments import services
from commitments.errors import (
    CommentInvalid,
    NothingChanged,
    ProposalAlreadyOpen,
    ProposalNotOpen,
    ReassignInvalid,
)
from commitments.models import Commitment, EventKind, OutboxEvent, Status
from config.api_errors import exception_handler
from integrations.models import ApiToken
from tests.harness.api import (
    DROP,
    SYNC,
    assert_envelope,
    mint,
    post_json,
    rows,
    sync_replay_statements,
    sync_statements,
    warm_caches,
)
from tests.harness.concurrency import race


@pytest.fixture
def token(assigner):
    return mint(assigner)


def _commitment(
    assigner, assignee, *, status=Status.ACTIVE, external_id="OPS-42", external_system="jira"
) -> Commitment:
    commitment = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Ship it",
        deadline=None,
        external_system=external_system,
        external_id=external_id,
    )
    if status in (Status.ACTIVE, Status.COMPLETED):
        services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    if status == Status.COMPLETED:
        services.commitment_complete(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    if status == Status.REFUSED:
        services.commitment_decline(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    if status == Status.WITHDRAWN:
        services.commitment_withdraw(actor=Actor.for_user(assigner), commitment_id=commitment.pk)
    commitment.refresh_from_db()
    assert commitment.status == status
    return commitment


@pytest.fixture
def active(assigner, assignee):
    return _commitment(assigner, assignee)


def _body(**overrides):
    body = {"externalSystem": "jira", "externalId": "OPS-42", "status": "Completed"}
    body.update(overrides)
    return {key: value for key, value in body.items() if value is not DROP}


def _sync(client, token, **overrides):
    return post_json(client, SYNC, _body(**overrides), token=token)


# --- completing --------------------------------------------------------------------


def test_it_completes_an_active_commitment(client, token, active, assigner):
    response = _sync(client, token)
    assert response.status_code == 200
    assert response.json() == {
        "id": str(active.pk),
        "status": "Completed",
        "previousStatus": "Active",
        "changed": True,
    }
    active.refresh_from_db()
    assert active.status == Status.COMPLETED and active.completed_at is not None

    api_token = ApiToken.objects.get()
    event = AuditEvent.objects.for_object(active).get(action="completed")
    assert event.actor_kind == "api_token" and event.token_id == api_token.id
    assert event.user == assigner
    assert event.payload["externalSystem"] == "jira" and event.payload["externalId"] == "OPS-42"
    outbox = OutboxEvent.objects.get(commitment=active, kind=EventKind.COMPLETED)
    assert outbox.actor_kind == "api_token" and outbox.actor_token_id == api_token.id
    assert outbox.previous_status == "Active" and outbox.new_status == "Completed"


def test_a_replay_answers_200_and_writes_nothing(client, token, active):
    assert _sync(client, token).json()["changed"] is True
    active.refresh_from_db()
    completed_at, before = active.completed_at, rows()
    response = _sync(client, token)
    assert response.status_code == 200
    assert response.json() == {
        "id": str(active.pk),
        "status": "Completed",
        "previousStatus": "Completed",
        "changed": False,
    }
    assert rows() == before
    active.refresh_from_db()
    assert active.completed_at == completed_at


def test_a_commitment_completed_in_the_interface_replays_as_unchanged(
    client, token, assigner, assignee
):
    _commitment(assigner, assignee, status=Status.COMPLETED)
    before = rows()
    assert _sync(client, token).json()["changed"] is False
    assert rows() == before


def test_the_reference_is_trimmed(client, token, active):
    assert _sync(client, token, externalSystem=" jira ", externalId="\tOPS-42\n").status_code == 200


def test_unknown_fields_are_ignored(client, token, active):
    assert _sync(client, token, comment="closed by bot").status_code == 200


# --- refusals ----------------------------------------------------------------------


@pytest.mark.parametrize("status", [Status.PENDING_HANDSHAKE, Status.REFUSED, Status.WITHDRAWN])
def test_an_impossible_move_is_invalid_transition(client, token, assigner, assignee, status):
    _commitment(assigner, assignee, status=status)
    before = rows()
    body = assert_envelope(_sync(client, token), 409, "invalid_transition", details=True)
    assert body["details"] == {"currentStatus": status.value}
    assert body["message"] == f"Cannot complete a commitment whose status is {status.value}."
    assert rows() == before


def test_a_reassigned_commitment_is_still_found_by_its_reference(
    client, token, assigner, assignee, make_user
):
    """Reassigning keeps the external reference: the sync finds it, and once
    the new person accepted, completes it."""
    squire = make_user("squire@example.com")
    c = _commitment(assigner, assignee)
    services.commitment_reassign(
        actor=Actor.for_user(assigner), commitment_id=c.pk, assignee_email=squire.email
    )
    assert_envelope(_sync(client, token), 409, "invalid_transition", details=True)
    services.commitment_accept(actor=Actor.for_user(squire), commitment_id=c.pk)
    response = _sync(client, token)
    assert response.status_code == 200
    assert (response.json()["id"], response.json()["status"]) == (str(c.pk), "Completed")


@pytest.mark.parametrize(
    ("error", "status", "name"),
    [
        (ProposalNotOpen(), 409, "proposal_not_open"),
        (ProposalAlreadyOpen(), 409, "proposal_open"),
        (CommentInvalid("Write something to comment."), 400, "invalid_payload"),
        (ReassignInvalid("It is asked of that person already."), 400, "invalid_payload"),
        (NothingChanged(), 400, "invalid_payload"),
    ],
)
def test_the_conversations_errors_answer_the_envelope(error, status, name):
    """No route of the contract makes the conversation's moves; should one,
    its errors answer the envelope, never a 500."""
    response = exception_handler(error, {})
    assert (response.status_code, response.data["error"]) == (status, name)
    assert response.data["message"] == str(error)


def test_an_unknown_reference_is_not_found(client, token, active):
    before = rows()
    assert_envelope(_sync(client, token, externalId="OPS-43"), 404, "not_found", details=False)
    assert_envelope(_sync(client, token, externalSystem="github"), 404, "not_found")
    assert rows() == before


def test_another_assigners_reference_is_not_found(client, assignee, outsider, token):
    theirs = _commitment(outsider, assignee)
    before = rows()
    assert_envelope(_sync(client, token), 404, "not_found")
    assert rows() == before
    theirs.refresh_from_db()
    assert theirs.status == Status.ACTIVE


def test_a_reference_where_the_owner_is_only_the_assignee_is_not_found(client, assigner, assignee):
    _commitment(assigner, assignee)
    assert_envelope(_sync(client, mint(assignee)), 404, "not_found")


def test_the_same_reference_of_two_assigners_completes_only_the_owners(
    client, token, assigner, assignee, outsider
):
    mine = _commitment(assigner, assignee)
    theirs = _commitment(outsider, assignee)
    assert _sync(client, token).json()["id"] == str(mine.pk)
    theirs.refresh_from_db()
    assert theirs.status == Status.ACTIVE


@pytest.mark.parametrize(
    "status",
    [
        "Active",
        "Refused",
        "Pending_Handshake",
        "Draft",
        "completed",
        "COMPLETED",
        " Completed",
        "",
        None,
        1,
        True,
    ],
)
def test_completed_is_the_only_status_an_external_system_may_drive(client, token, active, status):
    before = rows()
    body = assert_envelope(
        _sync(client, token, status=status), 400, "invalid_payload", details=True
    )
    assert "status" in body["details"]
    assert rows() == before


@pytest.mark.parametrize("field", ["externalSystem", "externalId", "status"])
def test_every_field_is_required(client, token, active, field):
    body = assert_envelope(_sync(client, token, **{field: DROP}), 400, "invalid_payload")
    assert field in body["details"]


@pytest.mark.parametrize(("field", "limit"), [("externalSystem", 32), ("externalId", 128)])
def test_a_reference_at_its_length_limit_is_looked_up(
    client, token, assigner, assignee, field, limit
):
    _commitment(
        assigner,
        assignee,
        **{
            "externalSystem": {"external_system": "s" * limit},
            "externalId": {"external_id": "i" * limit},
        }[field],
    )
    value = ("s" if field == "externalSystem" else "i") * limit
    assert _sync(client, token, **{field: value}).status_code == 200


@pytest.mark.parametrize(("field", "limit"), [("externalSystem", 32), ("externalId", 128)])
def test_a_reference_one_past_its_length_limit_is_refused(client, token, active, field, limit):
    body = assert_envelope(
        _sync(client, token, **{field: "x" * (limit + 1)}), 400, "invalid_payload"
    )
    assert field in body["details"]


@pytest.mark.parametrize("field", ["externalSystem", "externalId"])
@pytest.mark.parametrize("value", ["", "   ", 7, None])
def test_a_reference_must_be_a_non_blank_string(client, token, active, field, value):
    body = assert_envelope(_sync(client, token, **{field: value}), 400, "invalid_payload")
    assert field in body["details"]


def test_a_body_that_is_not_a_json_object_is_refused(client, token, active):
    before = rows()
    for raw, content_type in [
        ("[]", "application/json"),
        ("{", "application/json"),
        ('{"status": "Completed"}', "text/plain"),
    ]:
        response = post_json(client, SYNC, raw, token=token, content_type=content_type)
        assert_envelope(response, 400, "invalid_payload", details=True)
    assert rows() == before


# --- query budget ------------------------------------------------------------------
# Counted as pytest-django counts them: the transaction's BEGIN and COMMIT (inside
# a test's own transaction, its SAVEPOINT and RELEASE) included. The same on every
# database; the first use of the token in a minute adds its one UPDATE.


def _token_updates(captured) -> list[str]:
    return [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].startswith('UPDATE "integrations_apitoken"')
    ]


def test_a_completing_sync_takes_its_budget_of_statements(
    client, token, active, assigner, assignee, django_assert_num_queries
):
    _commitment(assigner, assignee, external_id="warm-up")
    assert _sync(client, token, externalId="warm-up").status_code == 200  # writes last_used_at
    warm_caches()
    with django_assert_num_queries(sync_statements()) as captured:
        response = _sync(client, token)
    assert response.json()["changed"] is True
    assert not _token_updates(captured)


def test_a_completing_sync_that_is_the_first_use_in_a_minute_takes_one_more(
    client, token, active, django_assert_num_queries
):
    warm_caches()
    with django_assert_num_queries(sync_statements() + 1) as captured:
        response = _sync(client, token)
    assert response.json()["changed"] is True
    assert ApiToken.objects.get().last_used_at is not None
    assert len(_token_updates(captured)) == 1


def _writes(captured) -> list[str]:
    return [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].startswith(("UPDATE", "INSERT", "DELETE"))
    ]


def _changes() -> tuple[int, int, list[tuple]]:
    return (
        AuditEvent.objects.count(),
        OutboxEvent.objects.count(),
        list(Commitment.objects.values_list("pk", "status", "updated_at", "completed_at")),
    )


def test_a_replay_takes_its_budget_and_writes_nothing(
    client, token, active, django_assert_num_queries
):
    # On PostgreSQL the compare-and-set UPDATE runs (a `WITH`, so not among
    # _writes) and matches no row: nothing is written, which _changes shows.
    _sync(client, token)
    warm_caches()
    before = _changes()
    with django_assert_num_queries(sync_replay_statements()) as captured:
        assert _sync(client, token).json()["changed"] is False
    assert not _writes(captured)
    assert _changes() == before


def test_a_replay_that_is_the_first_use_in_a_minute_takes_one_more_and_writes_only_that(
    client, token, active, django_assert_num_queries
):
    _sync(client, token)
    ApiToken.objects.update(last_used_at=timezone.now() - dt.timedelta(minutes=2))
    warm_caches()
    before = _changes()
    with django_assert_num_queries(sync_replay_statements() + 1) as captured:
        assert _sync(client, token).json()["changed"] is False
    assert _writes(captured) == _token_updates(captured)
    assert len(_token_updates(captured)) == 1
    assert _changes() == before


@pytest.mark.django_db(transaction=True)
def test_the_query_budget_holds_outside_a_test_transaction(
    client, make_user, django_assert_num_queries
):
    # A real BEGIN and COMMIT, as in production, rather than a savepoint.
    assigner, assignee = make_user("lead@example.com"), make_user("knight@example.com")
    token = mint(assigner)
    _commitment(assigner, assignee, external_id="first")
    _commitment(assigner, assignee, external_id="second")
    warm_caches()
    with django_assert_num_queries(sync_statements() + 1):
        assert _sync(client, token, externalId="first").json()["changed"] is True
    with django_assert_num_queries(sync_statements()):
        assert _sync(client, token, externalId="second").json()["changed"] is True
    with django_assert_num_queries(sync_replay_statements()):
        assert _sync(client, token, externalId="first").json()["changed"] is False


# --- PostgreSQL ----------------------------------------------------------------------


@pytest.mark.postgres
def test_racing_syncs_complete_once_and_replay_the_rest(assigner, assignee):
    token = mint(assigner)
    commitment = _commitment(assigner, assignee)
    callers = 10

    def call() -> tuple[int, bool]:
        response = _sync(Client(), token)
        return response.status_code, response.json().get("changed")

    results = race([call] * callers)

    assert sorted(results) == [(200, False)] * (callers - 1) + [(200, True)]
    assert AuditEvent.objects.for_object(commitment).filter(action="completed").count() == 1
    assert OutboxEvent.objects.filter(commitment=commitment, kind="completed").count() == 1
