"""The token API (/api/v1/) pays only for what it uses: it skips the pages'
middleware (config.middleware.PageMiddlewareStart: no session, CSRF, messages,
django.contrib.auth's request.user or allauth), while its request ids, error
envelope, HTTPS rule and private answers stay; the pages, POST /api/gather
among them, keep all of it."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import path
from django.utils import timezone

from config.urls import urlpatterns as project_urls
from tests.harness.api import (
    INBOX,
    assert_envelope,
    inbox_body,
    inbox_statements,
    mint,
    post_json,
    warm_caches,
)


def boom(request):
    raise RuntimeError("secret internals")


urlpatterns = [path("api/v1/boom", boom), *project_urls]

pytestmark = pytest.mark.django_db

# What the pages' middleware leaves on a request it passed (sessions, CSRF,
# django.contrib.auth, messages, allauth).
PAGE_TRACES = ("session", "user", "_messages", "allauth")


def page_traces(request) -> set[str]:
    traces = {name for name in PAGE_TRACES if name in vars(request)}
    if "CSRF_COOKIE" in request.META:
        traces.add("CSRF_COOKIE")
    return traces


def assert_lean(response) -> None:
    """An answer of the token API: a request id, no cookie, nothing varying on one."""
    assert len(response["X-Request-ID"]) >= 16
    assert not response.cookies
    assert "Cookie" not in response.get("Vary", "")
    assert "X-Frame-Options" not in response


@pytest.fixture
def token(assigner, assignee):
    warm_caches()
    return mint(assigner)


def test_a_token_call_passes_none_of_the_pages_middleware(client, token):
    response = post_json(client, INBOX, inbox_body(), token=token)

    assert response.status_code == 201
    assert_lean(response)
    # DRF set the token's owner; nothing else of the pages' middleware was there.
    assert page_traces(response.wsgi_request) == {"user"}
    assert response.wsgi_request.user.email == "lead@example.com"


def test_a_browsers_session_cookie_is_never_read_by_the_api(client, assigner, token):
    """A signed-in browser's cookie travels with its calls to the API: no
    session is loaded for it, so the call costs its own statements only."""
    client.force_login(assigner)
    post_json(client, INBOX, inbox_body(externalId="OPS-1"), token=token)  # last use recorded

    with CaptureQueriesContext(connection) as queries:
        response = post_json(client, INBOX, inbox_body(), token=token)

    assert response.status_code == 201
    assert_lean(response)
    assert not [q for q in queries.captured_queries if "django_session" in q["sql"]]
    assert len(queries) == inbox_statements()


@pytest.mark.parametrize(
    ("method", "route", "body", "status", "error"),
    [
        ("post", INBOX, "{}", 401, "unauthorized"),
        ("get", INBOX, None, 405, "method_not_allowed"),
        ("post", "/api/v1/no-such-route", "{}", 404, "not_found"),
        ("post", INBOX, "{not json", 400, "invalid_payload"),
    ],
)
def test_the_apis_errors_keep_their_envelope_and_request_id(
    client, token, method, route, body, status, error
):
    headers = {"Authorization": f"Bearer {token}"} if status != 401 else {}
    if method == "get":
        response = client.get(route, headers=headers)
    else:
        response = client.post(route, data=body, content_type="application/json", headers=headers)

    assert_envelope(response, status, error)
    assert_lean(response)


def test_a_body_over_the_limit_is_refused_with_the_envelope(client, token, settings):
    settings.API_MAX_BODY_BYTES = 64
    response = post_json(client, INBOX, {"description": "x" * 100}, token=token)

    assert_envelope(response, 413, "payload_too_large")
    assert_lean(response)


@pytest.mark.urls("tests.config.test_api_path")
def test_a_crash_in_the_api_is_the_envelope_without_internals():
    response = Client(raise_request_exception=False).post("/api/v1/boom")

    assert response.status_code == 500
    assert response.json() == {
        "error": "internal_error",
        "message": "Something went wrong on our side.",
    }
    assert "secret" not in response.content.decode()
    assert_lean(response)


@override_settings(HTTPS_ONLY=True, ALLOWED_HOSTS=["example.com", "localhost"])
def test_the_api_over_plain_http_is_still_refused_with_an_id(client, token):
    response = post_json(client, INBOX, inbox_body(), token=token, HOST="example.com")

    assert_envelope(response, 403, "https_required")
    assert "Location" not in response
    assert_lean(response)


def test_an_answer_to_a_token_is_still_private(client, token):
    response = post_json(client, INBOX, inbox_body(), token=token)

    assert "no-store" in response["Cache-Control"]


def test_the_api_answers_in_utc_whatever_a_page_activated_before(client, assigner, token):
    """A signed-in page activates its person's time zone on the thread that
    served it; the next request on that thread may be the API's."""
    assigner.timezone = "Asia/Tokyo"
    assigner.save(update_fields=["timezone"])
    client.force_login(assigner)
    assert client.get("/settings/").status_code == 200
    assert timezone.get_current_timezone_name() == "Asia/Tokyo"

    response = post_json(client, INBOX, inbox_body(), token=token)

    assert response.status_code == 201
    assert timezone.get_current_timezone_name() == "UTC"


# --- the pages keep everything -------------------------------------------------------


def test_a_page_still_passes_the_pages_middleware(client, assigner):
    client.force_login(assigner)

    response = client.get("/settings/")

    assert response.status_code == 200
    assert page_traces(response.wsgi_request) >= {"session", "user", "_messages", "allauth"}
    assert response["X-Frame-Options"] == "DENY"
    assert "Cookie" in response["Vary"]


def test_csrf_is_still_enforced_on_a_page_form(assigner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(assigner)

    response = client.post("/settings/profile/", {"display_name": "Forged"})

    assert response.status_code == 403
    assigner.refresh_from_db()
    assert assigner.display_name != "Forged"


def test_csrf_is_still_enforced_on_the_session_api(assigner):
    """POST /api/gather takes a session, so it passes the pages' middleware."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(assigner)

    response = client.post(
        "/api/gather", data=json.dumps({"text": "x"}), content_type="application/json"
    )

    assert_envelope(response, 403, "forbidden")
    assert "session" in vars(response.wsgi_request)
