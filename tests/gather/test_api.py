"""POST /api/gather: session cookie and CSRF only, the body's limits, the
user's own key (no_byok_key without one), the per-user rate limit, the
provider's failures as 502, and a success validated against the draft-list
schema, with nothing written to the commitments table. The provider is the
fake one on loopback (tests/harness/fake_provider.py), reached by the real SDKs."""

from __future__ import annotations

import logging
import threading

import pytest
from django.db import connection
from django.test import Client

from audit.models import AuditEvent
from commitments.models import Commitment
from gather import api
from tests.harness.fake_provider import draft
from tests.harness.gather import (
    ANTHROPIC_KEY,
    KEYS,
    OPENAI_KEY,
    browser,
    gather,
    give_key,
    validate_drafts,
)

pytestmark = pytest.mark.django_db

NOTES = (
    "Weekly sync.\n\n"
    "Priya will send the revised budget to finance by Friday.\n\n"
    "Sam said he would look into the flaky login test."
)
BUDGET = draft(
    "Send the revised budget to finance",
    "Priya will send the revised budget to finance by Friday.",
    assignee_name="Priya",
    deadline_text="by Friday",
)


def assert_error(response, status: int, error: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["error"] == error
    assert body["message"]
    return body


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_it_answers_drafts_with_the_users_own_key_and_stores_nothing(
    fake_provider, assigner, provider
):
    give_key(assigner, provider)
    fake_provider.answer([BUDGET], usage=(321, 45))
    client = browser(assigner)

    response = gather(client, {"text": NOTES})

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"drafts", "model", "usage", "refusal"}
    assert body["refusal"] is None
    assert body["usage"] == {"inputTokens": 321, "outputTokens": 45}
    assert body["model"]
    [only] = body["drafts"]
    assert only["description"] == "Send the revised budget to finance"
    assert only["confidence"] == "high"
    assert only["sourceQuote"] == BUDGET["sourceQuote"]
    assert only["deadlineText"] == "by Friday"
    assert set(only) == {
        "description",
        "assigneeName",
        "assigneeEmail",
        "deadline",
        "deadlineText",
        "confidence",
        "sourceQuote",
    }
    assert validate_drafts(body) == body["drafts"]  # the contract's rules, already met
    assert fake_provider.last.key == KEYS[provider]
    assert "revised budget" in fake_provider.last.user_text
    assert Commitment.objects.count() == 0
    assert not AuditEvent.objects.filter(action__startswith="draft").exists()


def test_a_model_that_finds_nothing_gives_an_empty_list(fake_provider, assigner):
    give_key(assigner)
    fake_provider.answer([])
    client = browser(assigner)

    response = gather(client, {"text": "Lunch was nice. Nobody promised anything."})

    assert response.status_code == 200
    assert response.json()["drafts"] == []
    assert response.json()["refusal"] is None


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_model_that_declines_answers_200_with_no_drafts_its_words_and_the_usage(
    fake_provider, assigner, provider
):
    give_key(assigner, provider)
    fake_provider.refuse(
        "I'm sorry, but I can't help with that request.", usage=(640, 11), model="small-2026-01"
    )
    client = browser(assigner)
    commitments, events = Commitment.objects.count(), AuditEvent.objects.count()

    response = gather(client, {"text": NOTES})

    assert response.status_code == 200, response.content
    body = response.json()
    assert body == {
        "drafts": [],
        "model": "small-2026-01",
        "usage": {"inputTokens": 640, "outputTokens": 11},
        "refusal": "I'm sorry, but I can't help with that request.",
    }
    assert validate_drafts(body) == []  # the draft-list schema still holds
    assert Commitment.objects.count() == commitments == 0
    assert AuditEvent.objects.count() == events
    assert len(fake_provider.requests) == 1


def test_an_address_written_next_to_an_ambiguous_name_settles_it_for_collaborators_only(
    fake_provider, assigner, make_user
):
    from audit.services import Actor
    from commitments.services import commitment_create_pending

    for email, name in [
        ("sam.okafor@cliffside.example", "Sam Okafor"),
        ("sam.delaney@cliffside.example", "Sam Delaney"),
    ]:
        commitment_create_pending(
            actor=Actor.for_user(assigner),
            assigner=assigner,
            assignee=make_user(email, display_name=name),
            description="Earlier work",
            deadline=None,
        )
    make_user("sam@agency.example", display_name="Sam Agency")  # a user, but no collaborator
    give_key(assigner)
    text = (
        "Sam (sam.okafor@cliffside.example) will send the final media plan by Tuesday.\n"
        "Sam (sam@agency.example) will draft the social posts."
    )
    fake_provider.answer(
        [
            draft(
                "Send the final media plan",
                "Sam (sam.okafor@cliffside.example) will send the final media plan by Tuesday.",
                assignee_name="Sam",
            ),
            draft(
                "Draft the social posts",
                "Sam (sam@agency.example) will draft the social posts.",
                assignee_name="Sam",
                assignee_email="sam@agency.example",
            ),
        ]
    )

    response = gather(browser(assigner), {"text": text})

    assert response.status_code == 200, response.content
    assert [d["assigneeEmail"] for d in response.json()["drafts"]] == [
        "sam.okafor@cliffside.example",
        None,
    ]
    assert {c["name"] for c in fake_provider.last.collaborators} == {"Sam Okafor", "Sam Delaney"}


def test_without_a_session_it_is_401(fake_provider, db):
    client = Client(enforce_csrf_checks=True)

    response = gather(client, {"text": NOTES})

    assert_error(response, 401, "unauthorized")
    assert "Bearer" not in response["WWW-Authenticate"]  # a token would not do either
    assert fake_provider.requests == []


def test_a_bearer_token_is_401_even_alongside_a_session(fake_provider, assigner):
    from integrations.services import api_token_mint

    give_key(assigner)
    token = api_token_mint(user=assigner, name="script").plaintext
    client = browser(assigner)

    body = assert_error(
        gather(client, {"text": NOTES}, HTTP_AUTHORIZATION=f"Bearer {token}"), 401, "unauthorized"
    )
    assert "POST /api/v1/inbox" in body["message"]
    assert_error(
        gather(Client(), {"text": NOTES}, HTTP_AUTHORIZATION=f"Bearer {token}"),
        401,
        "unauthorized",
    )
    assert fake_provider.requests == []


@pytest.mark.parametrize("token", [None, "wrong-token-00000000000000000000000"])
def test_a_session_without_a_valid_csrf_token_is_403(fake_provider, assigner, token):
    give_key(assigner)
    client = browser(assigner)
    headers = {"HTTP_X_CSRFTOKEN": token} if token else {}

    body = assert_error(gather(client, {"text": NOTES}, csrf=False, **headers), 403, "forbidden")
    assert "CSRF" in body["message"]
    assert fake_provider.requests == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([NOTES], "body"),
        ('"just a string"', "body"),
        ({}, "text"),
        ({"text": 42}, "text"),
        ({"text": None}, "text"),
        ({"text": ["a"]}, "text"),
        ({"text": ""}, "text"),
        ({"text": " \n\t "}, "text"),
        ({"text": "x" * 100_001}, "text"),
        ("{not json", "body"),
    ],
)
def test_an_invalid_body_is_400_invalid_payload(fake_provider, assigner, body, field):
    give_key(assigner)
    client = browser(assigner)

    answer = assert_error(gather(client, body), 400, "invalid_payload")

    assert field in answer["details"]
    assert fake_provider.requests == []


def test_a_body_that_is_not_json_is_400(fake_provider, assigner):
    give_key(assigner)
    client = browser(assigner)

    answer = assert_error(
        gather(client, "text=hello", content_type="text/plain"), 400, "invalid_payload"
    )
    assert "body" in answer["details"]


def test_the_text_limit_counts_characters_after_trimming(fake_provider, assigner, settings):
    settings.GATHER_MAX_CHUNK_CHARS = 200_000  # one upstream call for the test
    give_key(assigner)
    client = browser(assigner)

    response = gather(client, {"text": "   " + "é" * 100_000 + "\n\n  "})

    assert response.status_code == 200, response.content


def test_a_body_over_one_mebibyte_is_413(fake_provider, assigner):
    give_key(assigner)
    client = browser(assigner)

    assert_error(gather(client, {"text": "x" * (1024 * 1024)}), 413, "payload_too_large")
    assert fake_provider.requests == []


def test_without_a_model_key_it_is_400_naming_the_model_keys_page(
    fake_provider, assigner, settings
):
    settings.SITE_URL = "https://commitments.example.com"
    client = browser(assigner)

    body = assert_error(gather(client, {"text": NOTES}), 400, "no_byok_key")

    assert "Model keys" in body["message"]
    assert "https://commitments.example.com/settings/model-keys/" in body["message"]
    assert fake_provider.requests == []


def test_calls_refused_before_the_limit_spend_none_of_it(fake_provider, assigner, settings):
    settings.GATHER_RATE_BURST = 1
    settings.GATHER_RATE_PER_HOUR = 1
    client = browser(assigner)
    for _ in range(3):
        assert_error(gather(client, {"text": NOTES}), 400, "no_byok_key")
        assert_error(gather(client, {"text": ""}), 400, "invalid_payload")
    give_key(assigner)

    assert gather(client, {"text": NOTES}).status_code == 200
    assert_error(gather(client, {"text": NOTES}), 429, "rate_limited")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(
    ("script", "words"),
    [
        ("invalid_key", "Incorrect API key"),
        ("quota", "exceeded your current quota"),
        ("missing_model", "does not exist"),
    ],
)
def test_a_provider_failure_is_502_with_the_providers_message(
    fake_provider, assigner, provider, script, words
):
    give_key(assigner, provider)
    getattr(fake_provider, script)()
    client = browser(assigner)

    response = gather(client, {"text": NOTES})

    body = assert_error(response, 502, "upstream_failure")
    assert words in body["message"]
    assert "Retry-After" not in response  # the provider's 429 is not ours
    assert len(fake_provider.requests) == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("script", ["malformed", "truncated", "garbage"])
def test_unusable_model_output_is_502(fake_provider, assigner, provider, script):
    give_key(assigner, provider)
    getattr(fake_provider, script)()
    client = browser(assigner)

    assert_error(gather(client, {"text": NOTES}), 502, "upstream_failure")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_provider_that_does_not_answer_in_time_is_502(
    fake_provider, assigner, provider, settings
):
    settings.GATHER_PROVIDER_TIMEOUT = 0.3
    give_key(assigner, provider)
    fake_provider.hang()
    client = browser(assigner)

    body = assert_error(gather(client, {"text": NOTES}), 502, "upstream_failure")

    assert "in time" in body["message"]


def test_neither_the_key_nor_the_text_is_logged(fake_provider, assigner, caplog):
    give_key(assigner)
    give_key(assigner, "anthropic")
    fake_provider.answer([BUDGET])
    fake_provider.invalid_key()
    client = browser(assigner)
    secret_text = NOTES + "\n\nThe vault code is 7431-SECRET."

    with caplog.at_level(logging.DEBUG):
        gather(client, {"text": secret_text})
        gather(client, {"text": secret_text})
        gather(client, {"text": ""})

    logged = caplog.text + "".join(str(r.args) for r in caplog.records)
    for secret in (OPENAI_KEY, ANTHROPIC_KEY, "7431-SECRET", "revised budget"):
        assert secret not in logged


# --- the rate limit, on a clock the test moves --------------------------------


@pytest.fixture
def clock(monkeypatch):
    """The rate limit's clock (gather.api.clock), in seconds, moved by the test."""

    class Clock:
        now = 1_800_000_000.0

        def __call__(self) -> float:
            return self.now

    fake = Clock()
    monkeypatch.setattr(api, "clock", fake)
    return fake


def test_the_burst_is_allowed_then_429_with_retry_after_then_allowed_again(
    fake_provider, assigner, settings, clock
):
    settings.GATHER_RATE_BURST = 3
    settings.GATHER_RATE_PER_HOUR = 12  # one call every 5 minutes
    give_key(assigner)
    client = browser(assigner)

    for _ in range(3):
        assert gather(client, {"text": NOTES}).status_code == 200
    refused = gather(client, {"text": NOTES})

    body = assert_error(refused, 429, "rate_limited")
    assert refused["Retry-After"] == "300"
    assert "5 minutes" in body["message"]
    assert len(fake_provider.requests) == 3  # the refused call went nowhere

    clock.now += 241  # 59 seconds to go: still "1 minute", rounded up
    refused = gather(client, {"text": NOTES})
    assert refused.status_code == 429
    assert refused["Retry-After"] == "59"
    assert "1 minute" in refused.json()["message"]

    clock.now += 59
    assert gather(client, {"text": NOTES}).status_code == 200
    assert gather(client, {"text": NOTES}).status_code == 429


def test_the_message_rounds_the_wait_up_to_whole_minutes(fake_provider, assigner, settings, clock):
    settings.GATHER_RATE_BURST = 1
    settings.GATHER_RATE_PER_HOUR = 7  # a call every 514.3 seconds
    give_key(assigner)
    client = browser(assigner)
    assert gather(client, {"text": NOTES}).status_code == 200

    refused = gather(client, {"text": NOTES})

    assert refused["Retry-After"] == "515"
    assert "9 minutes" in refused.json()["message"]


def test_each_user_has_a_bucket_of_their_own(fake_provider, assigner, assignee, settings, clock):
    settings.GATHER_RATE_BURST = 1
    give_key(assigner)
    give_key(assignee)
    lead, knight = browser(assigner), browser(assignee)

    assert gather(lead, {"text": NOTES}).status_code == 200
    assert gather(lead, {"text": NOTES}).status_code == 429
    assert gather(knight, {"text": NOTES}).status_code == 200


@pytest.mark.postgres
def test_twenty_concurrent_calls_against_a_burst_of_five_give_exactly_five(
    fake_provider, assigner, settings
):
    settings.GATHER_RATE_BURST = 5
    settings.GATHER_RATE_PER_HOUR = 1
    give_key(assigner)
    signed_in = Client()
    signed_in.force_login(assigner)
    session = signed_in.cookies
    start = threading.Barrier(20)
    statuses: list[int] = []
    lock = threading.Lock()

    def call() -> None:
        try:
            client = Client()
            client.cookies = session
            start.wait()
            status = gather(client, {"text": NOTES}).status_code
            with lock:
                statuses.append(status)
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(statuses) == [200] * 5 + [429] * 15
    assert len(fake_provider.requests) == 5


def test_the_try_it_clients_cookie_and_header_pass_the_csrf_check(fake_provider, assigner):
    """As Swagger UI on /api-reference sends it: the CSRF cookie its start-up
    script set, and that value in the X-CSRFToken header."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(assigner)
    client.get("/api-reference?script=")
    token = client.cookies["csrftoken"].value

    refused = gather(client, {"text": NOTES}, csrf=False)
    passed = gather(client, {"text": NOTES}, csrf=False, HTTP_X_CSRFTOKEN=token)

    assert_error(refused, 403, "forbidden")
    assert_error(passed, 400, "no_byok_key")  # past the CSRF check: no key stored
