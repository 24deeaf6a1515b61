"""Schemathesis against POST /api/gather (in-process WSGI, the test database, the
fake provider on loopback): generated valid and invalid bodies from a signed-in
session with its CSRF token never get a 5xx other than the documented 502, and
every response keeps to the document. The token-authenticated operations have
their own run (tests/integrations/test_api_schemathesis.py), which leaves this
session-only operation out."""

from __future__ import annotations

import pytest
import schemathesis
from django.test import Client
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from schemathesis import GenerationMode

from tests.harness.gather import give_key
from tests.harness.openapi import CHECKS, WSGIApp

EXAMPLES_PER_MODE = 20


@pytest.fixture
def schema(db):
    return schemathesis.openapi.from_wsgi("/api-reference/openapi.json", WSGIApp())


@pytest.fixture
def session_headers(assigner):
    """The cookies and header a signed-in browser sends, CSRF token included."""
    client = Client()
    client.force_login(assigner)
    client.get("/capture/")
    csrf = client.cookies["csrftoken"].value
    cookies = {"sessionid": client.cookies["sessionid"].value, "csrftoken": csrf}
    return cookies, {"X-CSRFToken": csrf}


@pytest.mark.parametrize("has_key", [True, False])
def test_generated_gather_calls_keep_to_the_document(
    schema, session_headers, assigner, fake_provider, settings, has_key
):
    settings.GATHER_RATE_BURST = 1000
    if has_key:
        give_key(assigner)
    operation = schema["/api/gather"]["POST"]
    statuses: set[int] = set()
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

        @given(case=operation.as_strategy(generation_mode=mode))
        @hypothesis_settings(
            max_examples=EXAMPLES_PER_MODE,
            deadline=None,
            database=None,
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def run(case):
            cookies, headers = session_headers
            # In place of the cookie schemathesis makes up for the cookieAuth scheme.
            case.cookies = {**(case.cookies or {}), **cookies}
            response = case.call_and_validate(headers=headers, checks=CHECKS)
            statuses.add(response.status_code)

        run()
    assert 400 in statuses
    assert (200 in statuses) is has_key


def test_without_the_session_and_csrf_the_answers_keep_to_the_document(schema, db):
    operation = schema["/api/gather"]["POST"]
    case = operation.Case(body={"text": "Sam will ship it."}, media_type="application/json")
    response = case.call_and_validate(checks=CHECKS)
    assert response.status_code == 401


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_refusal_keeps_to_the_document(
    schema, session_headers, assigner, fake_provider, provider
):
    give_key(assigner, provider)
    fake_provider.refuse("I can't help with that.")
    operation = schema["/api/gather"]["POST"]
    cookies, headers = session_headers
    case = operation.Case(
        body={"text": "Sam will ship it."}, media_type="application/json", cookies=cookies
    )

    response = case.call_and_validate(headers=headers, checks=CHECKS)

    assert response.status_code == 200
    assert response.json()["refusal"] == "I can't help with that."
