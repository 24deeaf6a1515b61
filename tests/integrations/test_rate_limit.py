"""The per-token rate limit of POST /api/v1/inbox and /api/v1/sync: off by
default; with API_RATE_BURST and API_RATE_PER_MINUTE set, a token that has
spent its burst is answered `429 rate_limited` with `Retry-After`, after the
token is checked and before the body is, and nothing is done."""

from __future__ import annotations

import os

import pytest
from django.db import connection
from django.test import Client

from commitments.models import Commitment
from tests.harness.api import (
    INBOX,
    SYNC,
    assert_envelope,
    inbox_body,
    inbox_statements,
    mint,
    post_json,
    rows,
    warm_caches,
)
from tests.harness.concurrency import race

SYNC_BODY = {"externalSystem": "jira", "externalId": "OPS-1", "status": "Completed"}


@pytest.fixture
def token(assigner, assignee):
    return mint(assigner)


@pytest.fixture(params=["database", pytest.param("redis", marks=pytest.mark.redis)])
def limited(request, settings):
    """The limit on: 2 calls at once, then one a minute; its buckets in the
    database (no REDIS_URL) or in Redis."""
    settings.API_RATE_BURST = 2
    settings.API_RATE_PER_MINUTE = 1
    settings.REDIS_URL = os.environ.get("REDIS_URL", "") if request.param == "redis" else ""
    return request.param


def inbox(client, token, n: int):
    return post_json(client, INBOX, inbox_body(externalId=f"OPS-{n}"), token=token)


def test_the_limit_is_off_by_default(client, token, settings):
    assert settings.API_RATE_BURST == 0
    statuses = {inbox(client, token, n).status_code for n in range(30)}
    assert statuses == {201}


def test_a_spent_burst_is_answered_429_with_retry_after(client, token, limited):
    assert inbox(client, token, 1).status_code == 201
    assert inbox(client, token, 2).status_code == 201
    before = rows()

    response = inbox(client, token, 3)

    body = assert_envelope(response, 429, "rate_limited", details=False)
    assert "Too many requests" in body["message"]
    assert response["Retry-After"] == "60"  # one call a minute
    assert rows() == before  # nothing was stored


def test_sync_shares_the_tokens_bucket(client, token, limited):
    inbox(client, token, 1)
    inbox(client, token, 2)

    response = post_json(client, SYNC, SYNC_BODY, token=token)

    assert_envelope(response, 429, "rate_limited")
    assert int(response["Retry-After"]) >= 1


def test_the_token_is_judged_before_the_limit_and_the_body_after(client, token, limited):
    inbox(client, token, 1)
    inbox(client, token, 2)
    # A bad token is still a 401, not a 429.
    unknown = post_json(client, INBOX, inbox_body(), token="svc_" + "x" * 36)
    assert unknown.status_code == 401
    # A bad body from the limited token is a 429: its body is not even read.
    invalid = post_json(client, INBOX, {"description": ""}, token=token)
    assert_envelope(invalid, 429, "rate_limited")


def test_each_token_has_its_own_bucket(client, token, assigner, limited):
    inbox(client, token, 1)
    inbox(client, token, 2)
    assert inbox(client, token, 3).status_code == 429

    other = mint(assigner, name="Other tracker")
    assert inbox(client, other, 4).status_code == 201


# --- the query budget --------------------------------------------------------------
# Off, the budgets of test_inbox.py and test_sync.py hold unchanged (7 for a
# steady inbox call). On, the bucket in the database adds its transaction (a
# savepoint and its release inside a test's transaction), a SELECT ... FOR
# UPDATE and an UPDATE; in Redis it adds no statement.


def test_with_buckets_in_the_database_a_call_takes_4_statements_more(
    client, token, settings, django_assert_num_queries
):
    settings.API_RATE_BURST, settings.API_RATE_PER_MINUTE = 10, 60
    settings.REDIS_URL = ""
    assert inbox(client, token, 0).status_code == 201  # the bucket's row, last_used_at
    warm_caches()
    with django_assert_num_queries(inbox_statements() + 4) as captured:
        assert inbox(client, token, 1).status_code == 201
    bucket = [q["sql"] for q in captured.captured_queries if "ratelimits_bucket" in q["sql"]]
    assert len(bucket) == 2
    assert bucket[0].startswith("SELECT")
    # SQLite has no FOR UPDATE: its transactions begin IMMEDIATE, writers one at a time.
    assert ("FOR UPDATE" in bucket[0]) == (connection.vendor == "postgresql")
    assert bucket[1].startswith("UPDATE")


def test_a_refused_call_takes_the_token_lookup_and_the_bucket_lookup(
    client, token, settings, django_assert_num_queries
):
    settings.API_RATE_BURST, settings.API_RATE_PER_MINUTE = 1, 1
    settings.REDIS_URL = ""
    assert inbox(client, token, 0).status_code == 201
    # The token's SELECT; the bucket's savepoint, SELECT ... FOR UPDATE, release.
    with django_assert_num_queries(4):
        assert inbox(client, token, 1).status_code == 429


@pytest.mark.redis
def test_with_buckets_in_redis_a_call_takes_no_statement_more(
    client, token, settings, django_assert_num_queries
):
    settings.API_RATE_BURST, settings.API_RATE_PER_MINUTE = 10, 60
    settings.REDIS_URL = os.environ["REDIS_URL"]
    assert inbox(client, token, 0).status_code == 201
    warm_caches()
    with django_assert_num_queries(inbox_statements()):
        assert inbox(client, token, 1).status_code == 201


# --- concurrent calls ------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.parametrize("where", ["database", pytest.param("redis", marks=pytest.mark.redis)])
def test_twenty_calls_at_once_get_exactly_the_burst_through(assigner, assignee, settings, where):
    settings.API_RATE_BURST, settings.API_RATE_PER_MINUTE = 5, 1
    settings.REDIS_URL = os.environ.get("REDIS_URL", "") if where == "redis" else ""
    token = mint(assigner)
    warm_caches()

    def call(n: int):
        return lambda: inbox(Client(), token, n)

    responses = race([call(n) for n in range(20)])

    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201] * 5 + [429] * 15
    assert Commitment.objects.count() == 5
    assert {r["Retry-After"] for r in responses if r.status_code == 429} <= {
        str(s) for s in range(1, 61)
    }
