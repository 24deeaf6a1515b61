"""Bearer authentication on the API: who gets in, who gets 401, and how often
last_used_at is written."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.services import Actor
from integrations import services, tokens
from integrations.models import ApiToken
from tests.integrations.api_support import (
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
    assert not [q for q in queries if q["sql"].upper().startswith("UPDATE")]


def test_last_used_at_moves_on_after_a_minute(client, assigner):
    token = mint(assigner)
    long_ago = timezone.now() - dt.timedelta(minutes=1, seconds=1)
    ApiToken.objects.update(last_used_at=long_ago)
    post_json(client, SYNC, SYNC_BODY, token=token)
    assert _token().last_used_at > long_ago + dt.timedelta(minutes=1)


def test_a_request_that_fails_after_authentication_still_counts_as_use(client, assigner):
    token = mint(assigner)
    response = post_json(client, INBOX, {"not": "valid"}, token=token)
    assert response.status_code == 400
    assert _token().last_used_at is not None


def test_the_last_used_update_is_conditional(assigner):
    # Two processes that both read a stale last_used_at: only one UPDATE matches.
    from integrations.authentication import _touch

    mint(assigner)
    stale = _token()
    also_stale = _token()
    _touch(stale)
    written = _token().last_used_at
    _touch(also_stale)
    assert _token().last_used_at == written


# --- PostgreSQL: the lookup and the conditional write are one statement -------------


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
def test_on_postgresql_the_lookup_loads_the_token_and_owner_as_the_orm_does(assigner):
    from integrations.authentication import _find_and_touch

    plaintext = mint(assigner)
    ApiToken.objects.update(last_used_at=timezone.now())  # fresh: nothing written
    found = _find_and_touch(tokens.digest(plaintext))
    expected = ApiToken.objects.select_related("user").get()
    for field in ApiToken._meta.concrete_fields:
        assert getattr(found, field.attname) == getattr(expected, field.attname), field.name
    for field in type(assigner)._meta.concrete_fields:
        assert getattr(found.user, field.attname) == getattr(expected.user, field.attname)
    assert found.user.pk == assigner.pk


@pytest.mark.postgres
def test_on_postgresql_an_unknown_digest_finds_nothing_and_writes_nothing(assigner):
    from integrations.authentication import _find_and_touch

    mint(assigner)
    assert _find_and_touch(tokens.digest(mint.__name__)) is None
    assert _token().last_used_at is None


@pytest.mark.postgres
@pytest.mark.parametrize("what", ["revoked token", "inactive owner"])
def test_on_postgresql_a_refused_token_is_not_marked_used(client, assigner, what):
    token = mint(assigner)
    if what == "revoked token":
        ApiToken.objects.update(revoked_at=timezone.now())
    else:
        type(assigner).objects.filter(pk=assigner.pk).update(is_active=False)
    _unauthorized(post_json(client, SYNC, SYNC_BODY, token=token))
    assert _token().last_used_at is None
