"""Bearer authentication on the API: who gets in, who gets 401, and how often
last_used_at is written."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from audit.models import AuditEvent
from audit.services import Actor
from commitments.models import Commitment
from integrations import services, tokens
from integrations.authentication import BearerTokenAuthentication, record_use
from integrations.models import ApiToken
from tests.harness.api import (
    INBOX,
    SYNC,
    assert_envelope,
    inbox_body,
    mint,
    post_json,
    rows,
)

SYNC_BODY = {"externalSystem": "jira", "externalId": "OPS-42", "status": "Completed"}


def _unauthorized(response) -> dict:
    body = assert_envelope(response, 401, "unauthorized", details=False)
    assert response["WWW-Authenticate"] == "Bearer"
    return body


@pytest.mark.parametrize("path", [INBOX, SYNC])
def test_it_rejects_a_request_without_a_token(client, assigner, path):
    _unauthorized(post_json(client, path, inbox_body()))


@pytest.mark.parametrize(
    "header",
    [
        "Basic bGVhZDpwYXNzd29yZA==",
        "Token {token}",
        "Bearer",
        "Bearer ",
        "Bearer {token} extra",
        "Bearer{token}",
        "{token}",
        "Bearer svc_short",
        "Bearer not-a-token-at-all",
    ],
)
def test_it_rejects_a_malformed_authorization_header(client, assigner, header):
    token = mint(assigner)
    response = post_json(client, INBOX, inbox_body(), Authorization=header.format(token=token))
    _unauthorized(response)


def test_a_token_with_a_wrong_checksum_is_refused_without_a_query(client, assigner):
    token = mint(assigner)
    mistyped = token[:-1] + ("A" if token[-1] != "A" else "B")
    with CaptureQueriesContext(connection) as queries:
        response = post_json(client, INBOX, inbox_body(), token=mistyped)
    _unauthorized(response)
    assert len(queries) == 0


def test_it_rejects_an_unknown_token(client, assigner):
    _unauthorized(post_json(client, INBOX, inbox_body(), token=tokens.generate()))


@pytest.mark.parametrize("path", [INBOX, SYNC])
def test_it_rejects_a_revoked_token(client, assigner, assignee, path):
    minted = services.api_token_mint(user=assigner, name="Jira")
    services.api_token_revoke(actor=Actor.for_user(assigner), token=minted.token)
    before = rows()
    body = inbox_body() if path == INBOX else SYNC_BODY
    _unauthorized(post_json(client, path, body, token=minted.plaintext))
    assert rows() == before


def test_it_rejects_the_token_of_a_deactivated_user(client, assigner, assignee):
    token = mint(assigner)
    assigner.is_active = False
    assigner.save()
    _unauthorized(post_json(client, INBOX, inbox_body(), token=token))


def test_the_scheme_name_is_case_insensitive(client, assigner, assignee):
    token = mint(assigner)
    response = post_json(client, INBOX, inbox_body(), Authorization=f"bearer {token}")
    assert response.status_code == 201


def test_the_token_is_checked_before_the_body(client, assigner):
    response = post_json(client, INBOX, "not json", content_type="text/plain")
    _unauthorized(response)
    response = post_json(client, INBOX, inbox_body(description=""), token=tokens.generate())
    _unauthorized(response)


def test_a_token_acts_only_for_its_owner(client, assigner, assignee, outsider):
    token = mint(outsider)
    assert post_json(client, INBOX, inbox_body(), token=token).status_code == 403


# --- last_used_at ----------------------------------------------------------------------


def _token() -> ApiToken:
    return ApiToken.objects.get()


def _authenticate(plaintext: str):
    """What the API's authentication class answers for this bearer token, and the
    use the view then records for an allowed call (TokenApiView.check_permissions)."""
    request = Request(APIRequestFactory().post(SYNC, HTTP_AUTHORIZATION=f"Bearer {plaintext}"))
    answer = BearerTokenAuthentication().authenticate(request)
    assert answer is not None, "the token was not taken"
    user, token = answer
    record_use(token)
    return user, token


def _token_updates(queries) -> list[str]:
    return [
        q["sql"]
        for q in queries
        if q["sql"].startswith("UPDATE") and "integrations_apitoken" in q["sql"]
    ]


def test_the_authentication_answers_the_owner_and_the_token(assigner):
    plaintext = mint(assigner)
    user, token = _authenticate(plaintext)
    assert user.pk == assigner.pk
    assert token.pk == _token().pk
    assert token.user is user


def test_first_use_records_last_used_at(client, assigner):
    token = mint(assigner)
    before = timezone.now()
    post_json(client, SYNC, SYNC_BODY, token=token)
    assert _token().last_used_at >= before


def test_last_used_at_is_written_at_most_once_a_minute(client, assigner):
    token = mint(assigner)
    post_json(client, SYNC, SYNC_BODY, token=token)
    first = _token().last_used_at
    with CaptureQueriesContext(connection) as queries:
        post_json(client, SYNC, SYNC_BODY, token=token)
    assert _token().last_used_at == first
    assert not _token_updates(queries)


def test_last_used_at_moves_on_after_a_minute(client, assigner):
    token = mint(assigner)
    long_ago = timezone.now() - dt.timedelta(minutes=1, seconds=1)
    ApiToken.objects.update(last_used_at=long_ago)
    with CaptureQueriesContext(connection) as queries:
        post_json(client, SYNC, SYNC_BODY, token=token)
    assert _token().last_used_at > long_ago + dt.timedelta(minutes=1)
    assert len(_token_updates(queries)) == 1


def test_a_request_that_fails_after_authentication_still_counts_as_use(client, assigner):
    token = mint(assigner)
    response = post_json(client, INBOX, {"not": "valid"}, token=token)
    assert response.status_code == 400
    assert _token().last_used_at is not None


def test_an_unknown_token_writes_nothing(client, assigner):
    mint(assigner)
    with CaptureQueriesContext(connection) as queries:
        _unauthorized(post_json(client, SYNC, SYNC_BODY, token=tokens.generate()))
    assert not _token_updates(queries)
    assert _token().last_used_at is None


def refuse(what: str, owner) -> None:
    """Make the owner's token one the API refuses: revoked, or its owner inactive."""
    if what == "revoked token":
        ApiToken.objects.update(revoked_at=timezone.now())
    else:
        type(owner).objects.filter(pk=owner.pk).update(is_active=False)


@pytest.mark.parametrize("what", ["revoked token", "inactive owner"])
def test_a_refused_token_is_not_marked_used(client, assigner, what):
    token = mint(assigner)
    refuse(what, assigner)
    with CaptureQueriesContext(connection) as queries:
        _unauthorized(post_json(client, SYNC, SYNC_BODY, token=token))
    assert not _token_updates(queries)
    assert _token().last_used_at is None


class _BeforeTheTokenUpdate:
    """A database execute wrapper: runs `meanwhile` once, just before the first
    UPDATE of the token row goes to the database, and keeps every such UPDATE's
    row count, in the order they ran."""

    def __init__(self, meanwhile):
        self.meanwhile = meanwhile
        self.rowcounts: list[int] = []

    def __call__(self, execute, sql, params, many, context):
        is_token_update = sql.startswith("UPDATE") and "integrations_apitoken" in sql
        if is_token_update and self.meanwhile is not None:
            meanwhile, self.meanwhile = self.meanwhile, None
            meanwhile()
        result = execute(sql, params, many, context)
        if is_token_update:
            self.rowcounts.append(context["cursor"].rowcount)
        return result


def test_of_two_requests_that_loaded_the_same_stale_row_only_one_writes(assigner):
    # Request A has loaded the token with last_used_at stale; before its UPDATE
    # runs, request B loads the same stale row and writes. A's UPDATE then
    # matches nothing: one write per minute, however the requests interleave.
    plaintext = mint(assigner)
    written: list[dt.datetime | None] = []

    def request_b() -> None:
        _authenticate(plaintext)
        written.append(_token().last_used_at)

    hook = _BeforeTheTokenUpdate(request_b)
    with connection.execute_wrapper(hook):
        _authenticate(plaintext)  # request A

    assert hook.rowcounts == [1, 0]  # B's UPDATE, then A's
    assert _token().last_used_at == written[0]


def test_a_token_revoked_after_it_was_loaded_is_not_marked_used(assigner):
    plaintext = mint(assigner)

    def revoke() -> None:
        ApiToken.objects.update(revoked_at=timezone.now())

    hook = _BeforeTheTokenUpdate(revoke)
    with connection.execute_wrapper(hook):
        _authenticate(plaintext)  # accepted: it was valid when it was loaded

    assert hook.rowcounts == [1, 0]  # the revocation, then the use that matches nothing
    assert _token().last_used_at is None


# --- PostgreSQL: a use within the minute leaves the row as it was -------------------


def _row_version() -> str:
    # xmin changes with every write of the row, even one that changes nothing.
    with connection.cursor() as cursor:
        cursor.execute("SELECT xmin::text FROM integrations_apitoken")
        return cursor.fetchone()[0]


@pytest.mark.postgres
def test_on_postgresql_a_use_within_the_minute_does_not_write_the_row(client, assigner):
    token = mint(assigner)
    post_json(client, SYNC, SYNC_BODY, token=token)
    written, version = _token().last_used_at, _row_version()
    post_json(client, SYNC, SYNC_BODY, token=token)
    assert _row_version() == version
    assert _token().last_used_at == written


@pytest.mark.postgres
@pytest.mark.parametrize("what", ["revoked token", "inactive owner"])
def test_on_postgresql_a_refused_token_leaves_the_row_as_it_was(client, assigner, what):
    token = mint(assigner)
    refuse(what, assigner)
    version = _row_version()
    _unauthorized(post_json(client, SYNC, SYNC_BODY, token=token))
    assert _row_version() == version


# --- expiry ---------------------------------------------------------------------------


def _expired_token(owner) -> str:
    minted = services.api_token_mint(
        user=owner, name="Jira", expires_at=timezone.now() + dt.timedelta(days=1)
    )
    ApiToken.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    return minted.plaintext


@pytest.mark.parametrize("path", [INBOX, SYNC])
def test_an_expired_token_is_refused_like_a_revoked_one(client, assigner, assignee, path):
    token = _expired_token(assigner)
    before = rows()
    body = inbox_body() if path == INBOX else SYNC_BODY
    response = _unauthorized(post_json(client, path, body, token=token))
    assert response["message"] == "The bearer token is not valid (unknown, revoked or expired)."
    assert Commitment.objects.count() == before.commitments


def test_the_first_refused_use_after_expiry_is_audited_once(client, assigner):
    token = _expired_token(assigner)

    for _ in range(3):
        _unauthorized(post_json(client, SYNC, SYNC_BODY, token=token))

    events = AuditEvent.objects.filter(action="api_token_expired")
    assert events.count() == 1
    event = events.get()
    stored = ApiToken.objects.get()
    assert event.payload["prefix"] == stored.prefix and event.payload["name"] == "Jira"
    assert event.subject_id == stored.pk
    assert stored.last_used_at is None  # a refused use is no use


def test_a_token_before_its_expiry_is_accepted(client, assigner, assignee):
    minted = services.api_token_mint(
        user=assigner, name="Jira", expires_at=timezone.now() + dt.timedelta(minutes=5)
    )
    response = post_json(client, INBOX, inbox_body(), token=minted.plaintext)
    assert response.status_code == 201
    assert not AuditEvent.objects.filter(action="api_token_expired").exists()


def test_a_revoked_and_expired_token_writes_no_expiry_row(client, assigner):
    token = _expired_token(assigner)
    ApiToken.objects.update(revoked_at=timezone.now())
    _unauthorized(post_json(client, SYNC, SYNC_BODY, token=token))
    assert not AuditEvent.objects.filter(action="api_token_expired").exists()
