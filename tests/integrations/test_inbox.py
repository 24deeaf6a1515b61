"""POST /api/v1/inbox: the contract of docs/api.md, field by field, error by
error."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client

from audit.models import AuditEvent
from commitments.models import Commitment, EventKind, OutboxEvent, Status
from integrations.models import ApiToken
from tests.harness.api import (
    DROP,
    INBOX,
    assert_envelope,
    inbox_body,
    inbox_statements,
    mint,
    post_json,
    rows,
    warm_caches,
)
from tests.harness.concurrency import race

FIELDS = [
    "assignerEmail",
    "assigneeEmail",
    "description",
    "deadline",
    "externalSystem",
    "externalId",
]


@pytest.fixture
def token(assigner, assignee):
    return mint(assigner)


def _post(client, body, token, **headers):
    return post_json(client, INBOX, body, token=token, **headers)


def _created(response) -> Commitment:
    assert response.status_code == 201, response.content
    assert set(response.json()) == {"id"}
    return Commitment.objects.get(pk=response.json()["id"])


def _invalid(response, *fields: str) -> dict:
    body = assert_envelope(response, 400, "invalid_payload", details=True)
    for field in fields:
        assert field in body["details"], body
    return body


# --- success -------------------------------------------------------------------------


def test_it_creates_a_pending_commitment_with_its_audit_event_and_notification_row(
    client, token, assigner, assignee
):
    response = _post(client, inbox_body(), token)
    commitment = _created(response)
    assert commitment.status == Status.PENDING_HANDSHAKE
    assert commitment.assigner == assigner and commitment.assignee == assignee
    assert commitment.description == "Ship the quarterly report"
    assert commitment.deadline == dt.datetime(2030, 3, 1, 17, 0, tzinfo=dt.UTC)
    assert commitment.raw_text is None
    assert (commitment.external_system, commitment.external_id) == ("jira", "OPS-42")

    api_token = ApiToken.objects.get()
    event = AuditEvent.objects.for_object(commitment).get()
    assert event.actor_kind == "api_token"
    assert event.token_id == api_token.id and event.token_prefix == api_token.prefix
    assert event.user == assigner
    assert event.payload["externalSystem"] == "jira" and event.payload["externalId"] == "OPS-42"

    outbox = OutboxEvent.objects.get()
    assert outbox.commitment == commitment and outbox.kind == EventKind.HANDSHAKE_REQUESTED
    assert outbox.actor_kind == "api_token" and outbox.actor_token_id == api_token.id


def test_e_mails_match_whatever_their_case(client, token, assigner, assignee):
    body = inbox_body(assignerEmail="LEAD@Example.COM", assigneeEmail="  Knight@EXAMPLE.com ")
    commitment = _created(_post(client, body, token))
    assert (commitment.assigner, commitment.assignee) == (assigner, assignee)


def test_a_null_deadline_means_none_tracked(client, token):
    assert _created(_post(client, inbox_body(deadline=None), token)).deadline is None


def test_unknown_fields_are_ignored(client, token):
    body = inbox_body(priority="high", labels=["a"], assignees=["x@example.com"])
    commitment = _created(_post(client, body, token))
    assert commitment.description == "Ship the quarterly report"


def test_strings_are_trimmed(client, token):
    body = inbox_body(description="  Ship it \n", externalSystem=" jira ", externalId="\tOPS-1 ")
    commitment = _created(_post(client, body, token))
    assert (commitment.description, commitment.external_system, commitment.external_id) == (
        "Ship it",
        "jira",
        "OPS-1",
    )


def test_a_charset_parameter_on_the_content_type_is_fine(client, token):
    response = _post(client, inbox_body(), token, content_type="application/json; charset=utf-8")
    _created(response)


def test_two_assigners_may_track_the_same_external_ticket(client, token, outsider):
    _created(_post(client, inbox_body(), token))
    other = mint(outsider)
    body = inbox_body(assignerEmail="outsider@example.com")
    _created(_post(client, body, other))
    assert Commitment.objects.filter(external_id="OPS-42").count() == 2


# --- field rules: each limit at the edge and one past it ------------------------------


@pytest.mark.parametrize(
    ("field", "limit"), [("description", 2000), ("externalSystem", 32), ("externalId", 128)]
)
def test_a_field_at_its_length_limit_is_accepted(client, token, field, limit):
    commitment = _created(_post(client, inbox_body(**{field: "x" * limit}), token))
    stored = {
        "description": commitment.description,
        "externalSystem": commitment.external_system,
        "externalId": commitment.external_id,
    }[field]
    assert stored == "x" * limit


@pytest.mark.parametrize(
    ("field", "limit"), [("description", 2000), ("externalSystem", 32), ("externalId", 128)]
)
def test_a_field_one_past_its_length_limit_is_refused(client, token, field, limit):
    before = rows()
    _invalid(_post(client, inbox_body(**{field: "x" * (limit + 1)}), token), field)
    assert rows() == before


@pytest.mark.parametrize(
    ("field", "limit"), [("description", 2000), ("externalSystem", 32), ("externalId", 128)]
)
def test_the_length_limit_applies_after_trimming(client, token, field, limit):
    _created(_post(client, inbox_body(**{field: "  " + "x" * limit + "  "}), token))


@pytest.mark.parametrize("field", ["description", "externalSystem", "externalId"])
@pytest.mark.parametrize("value", ["", "   ", "\n\t "])
def test_an_empty_or_whitespace_only_string_is_refused(client, token, field, value):
    _invalid(_post(client, inbox_body(**{field: value}), token), field)


@pytest.mark.parametrize("field", ["description", "externalSystem", "externalId"])
def test_a_one_character_string_is_the_shortest_accepted(client, token, field):
    _created(_post(client, inbox_body(**{field: " y "}), token))


@pytest.mark.parametrize("field", FIELDS)
def test_every_field_is_required(client, token, field):
    _invalid(_post(client, inbox_body(**{field: DROP}), token), field)


@pytest.mark.parametrize("field", [f for f in FIELDS if f != "deadline"])
def test_only_the_deadline_may_be_null(client, token, field):
    _invalid(_post(client, inbox_body(**{field: None}), token), field)


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", [42, True, ["x"], {"x": 1}])
def test_strings_must_be_strings(client, token, field, value):
    _invalid(_post(client, inbox_body(**{field: value}), token), field)


@pytest.mark.parametrize("field", ["assignerEmail", "assigneeEmail"])
@pytest.mark.parametrize(
    "value", ["lead", "lead@", "@example.com", "a b@example.com", "x" * 250 + "@example.com"]
)
def test_e_mails_must_be_addresses(client, token, field, value):
    _invalid(_post(client, inbox_body(**{field: value}), token), field)


def test_a_nul_character_is_refused(client, token):
    _invalid(_post(client, inbox_body(description="ship\x00it"), token), "description")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2030-03-01T17:00:00Z", dt.datetime(2030, 3, 1, 17, tzinfo=dt.UTC)),
        ("2030-03-01T17:00:00z", dt.datetime(2030, 3, 1, 17, tzinfo=dt.UTC)),
        ("2030-03-01t17:00:00+00:00", dt.datetime(2030, 3, 1, 17, tzinfo=dt.UTC)),
        ("2030-03-01T18:30:00+01:30", dt.datetime(2030, 3, 1, 17, tzinfo=dt.UTC)),
        ("2030-03-01T12:00:00-05:00", dt.datetime(2030, 3, 1, 17, tzinfo=dt.UTC)),
        ("2030-03-01T17:00Z", dt.datetime(2030, 3, 1, 17, tzinfo=dt.UTC)),
        ("2030-03-01T17:00:00.250Z", dt.datetime(2030, 3, 1, 17, 0, 0, 250000, tzinfo=dt.UTC)),
        ("2020-01-01T00:00:00Z", dt.datetime(2020, 1, 1, tzinfo=dt.UTC)),  # past is allowed
    ],
)
def test_a_deadline_is_an_absolute_iso_8601_datetime(client, token, value, expected):
    assert _created(_post(client, inbox_body(deadline=value), token)).deadline == expected


@pytest.mark.parametrize(
    "value",
    [
        "2030-03-01",  # a date alone
        "2030-03-01T17:00:00",  # no offset: ambiguous
        "2030-03-01 17:00:00Z",
        "20300301T170000Z",  # basic format
        "2030-W09-5T17:00:00Z",
        "2030-03-01T17:00:00+0100",
        "2030-02-30T17:00:00Z",
        "2030-03-01T24:00:00Z",
        "2030-03-01T17:00:60Z",
        "2030-03-01T17:00:00+24:00",
        "0001-01-01T00:00:00+01:00",  # before the year 1 in UTC
        "tomorrow",
        "in 3 days",
        "next Friday 5pm",
        "",
        1767225600,
    ],
)
def test_other_deadlines_are_refused(client, token, value):
    before = rows()
    _invalid(_post(client, inbox_body(deadline=value), token), "deadline")
    assert rows() == before


def test_every_failing_field_is_reported_at_once_and_nothing_is_stored(client, token):
    before = rows()
    body = inbox_body(
        description="",
        deadline="tomorrow",
        externalSystem="x" * 33,
        assigneeEmail="nope",
        externalId=DROP,
    )
    details = _invalid(_post(client, body, token))["details"]
    assert set(details) == {
        "description",
        "deadline",
        "externalSystem",
        "assigneeEmail",
        "externalId",
    }
    assert rows() == before


# --- the body ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/xml",
        "application/vnd.api+json",
        "",
    ],
)
def test_a_body_that_is_not_json_is_refused(client, token, content_type):
    before = rows()
    response = post_json(
        client, INBOX, "assignerEmail=lead@example.com", token=token, content_type=content_type
    )
    _invalid(response, "body")
    assert rows() == before


def test_json_sent_under_another_content_type_is_refused(client, token):
    response = _post(client, inbox_body(), token, content_type="text/plain")
    _invalid(response, "body")
    assert not Commitment.objects.exists()


@pytest.mark.parametrize("raw", ["{", "{'a': 1}", "nope", '{"a": NaN}', "\xff", ""])
def test_malformed_json_is_refused(client, token, raw):
    assert_envelope(_post(client, raw, token), 400, "invalid_payload")


@pytest.mark.parametrize("raw", ["[]", "[{}]", '"text"', "42", "null", "true"])
def test_json_that_is_not_an_object_is_refused(client, token, raw):
    _invalid(_post(client, raw, token), "body")


def test_absurdly_deep_json_is_refused_not_crashed(client, token):
    _invalid(_post(client, "[" * 200_000 + "]" * 200_000, token), "body")


# --- who may create: 403, then the assignee, then duplicates -------------------------


def test_an_assigner_other_than_the_token_owner_is_forbidden(client, token, outsider):
    before = rows()
    response = _post(client, inbox_body(assignerEmail="outsider@example.com"), token)
    assert_envelope(response, 403, "forbidden", details=False)
    assert rows() == before


def test_an_assigner_who_is_no_user_is_forbidden(client, token):
    response = _post(client, inbox_body(assignerEmail="ghost@example.com"), token)
    assert_envelope(response, 403, "forbidden", details=False)


def test_an_assignee_who_is_no_user_is_invalid_payload(client, token):
    before = rows()
    response = _post(client, inbox_body(assigneeEmail="ghost@example.com"), token)
    body = _invalid(response, "assigneeEmail")
    assert set(body["details"]) == {"assigneeEmail"}
    assert rows() == before


@pytest.mark.parametrize("who", ["unverified", "inactive"])
def test_an_unverified_or_inactive_assignee_is_refused_like_an_unknown_one(
    client, token, make_user, who
):
    if who == "unverified":
        make_user("newhire@example.com", verified=False)
    else:
        make_user("newhire@example.com", is_active=False)
    before = rows()

    response = _post(client, inbox_body(assigneeEmail="newhire@example.com"), token)
    unknown = _post(client, inbox_body(assigneeEmail="ghost@example.com"), token)

    body = _invalid(response, "assigneeEmail")
    assert set(body["details"]) == {"assigneeEmail"}
    assert body == unknown.json()  # the same answer: nothing says the account exists
    assert rows() == before


def test_field_errors_come_before_forbidden(client, token, outsider):
    body = inbox_body(assignerEmail="outsider@example.com", description="")
    _invalid(_post(client, body, token), "description")


def test_forbidden_comes_before_the_unknown_assignee(client, token, outsider):
    body = inbox_body(assignerEmail="outsider@example.com", assigneeEmail="ghost@example.com")
    assert_envelope(_post(client, body, token), 403, "forbidden")


def test_a_replayed_external_reference_is_a_conflict(client, token):
    _created(_post(client, inbox_body(), token))
    before = rows()
    response = _post(client, inbox_body(description="Something else", externalId=" OPS-42 "), token)
    assert_envelope(response, 409, "duplicate_external_ref", details=False)
    assert rows() == before


def test_a_conflict_is_only_judged_for_an_otherwise_valid_request(client, token, outsider):
    _created(_post(client, inbox_body(), token))
    assert _post(client, inbox_body(description=""), token).status_code == 400
    body = inbox_body(assignerEmail="outsider@example.com")
    assert _post(client, body, token).status_code == 403
    assert _post(client, inbox_body(assigneeEmail="ghost@example.com"), token).status_code == 400


# --- query budget ------------------------------------------------------------------
# Counted as pytest-django counts them (tests.harness.api.inbox_statements): on
# PostgreSQL the three writes are one statement, on SQLite a transaction of three;
# the first use of the token in a minute adds its UPDATE.


def test_a_successful_call_takes_its_budget_of_statements(client, token, django_assert_num_queries):
    _created(_post(client, inbox_body(externalId="warm-up"), token))  # writes last_used_at
    warm_caches()
    with django_assert_num_queries(inbox_statements()) as captured:
        response = _post(client, inbox_body(), token)
    _created(response)
    statements = [q["sql"] for q in captured.captured_queries]
    selects = [sql for sql in statements if sql.startswith("SELECT")]
    # One query finds the token with its owner; one resolves both e-mails.
    assert len(selects) == 2
    assert "integrations_apitoken" in selects[0] and "accounts_user" in selects[0]
    assert "accounts_user" in selects[1] and "LOWER" in selects[1].upper()
    assert not [sql for sql in statements if sql.startswith('UPDATE "integrations_apitoken"')]


def test_the_first_use_of_a_token_in_a_minute_adds_one_update(
    client, token, django_assert_num_queries
):
    warm_caches()
    assert ApiToken.objects.get().last_used_at is None
    with django_assert_num_queries(inbox_statements() + 1) as captured:
        response = _post(client, inbox_body(), token)
    _created(response)
    assert ApiToken.objects.get().last_used_at is not None
    writes = [q["sql"] for q in captured.captured_queries if 'last_used_at" =' in q["sql"]]
    assert len(writes) == 1
    assert writes[0].startswith('UPDATE "integrations_apitoken"')


@pytest.mark.django_db(transaction=True)
def test_the_query_budget_holds_outside_a_test_transaction(
    client, make_user, django_assert_num_queries
):
    # As in production: no test transaction around the call.
    assigner = make_user("lead@example.com")
    make_user("knight@example.com")
    token = mint(assigner)
    warm_caches()
    with django_assert_num_queries(inbox_statements(in_test_transaction=False) + 1):
        first = _post(client, inbox_body(externalId="first-use"), token)
    _created(first)
    assert ApiToken.objects.get().last_used_at is not None
    with django_assert_num_queries(inbox_statements(in_test_transaction=False)):
        steady = _post(client, inbox_body(), token)
    _created(steady)


# --- PostgreSQL: racing identical calls ----------------------------------------------


@pytest.mark.postgres
def test_twenty_identical_calls_at_once_create_one_commitment(assigner, assignee):
    token = mint(assigner)
    warm_caches()
    callers = 20

    def call() -> int:
        return _post(Client(), inbox_body(), token).status_code

    statuses = race([call] * callers)

    assert sorted(statuses) == [201] + [409] * (callers - 1)
    assert Commitment.objects.count() == 1
    commitment = Commitment.objects.get()
    assert AuditEvent.objects.for_object(commitment).count() == 1
    assert OutboxEvent.objects.filter(commitment=commitment).count() == 1
    assert OutboxEvent.objects.count() == 1
