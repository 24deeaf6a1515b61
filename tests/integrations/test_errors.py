"""One error envelope on every API route, 413 for bodies over 1 MiB, and never an
HTML page or a stack trace."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import pytest
from django.core.handlers.asgi import ASGIRequest
from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpResponse
from django.test import RequestFactory

from commitments.errors import (
    CommitmentNotFound,
    DuplicateExternalRef,
    InvalidTransition,
    NotPermitted,
)
from config.middleware import ApiErrorMiddleware
from integrations import api
from tests.harness.api import (
    INBOX,
    SYNC,
    assert_envelope,
    inbox_body,
    mint,
    post_json,
    rows,
)

LIMIT = 1024 * 1024


@pytest.fixture
def token(assigner, assignee):
    return mint(assigner)


def _padded_inbox_body(size: int) -> bytes:
    """A valid inbox body of exactly `size` bytes (the padding is an ignored field)."""
    base = inbox_body(padding="")
    raw = json.dumps(base).encode()
    base["padding"] = "x" * (size - len(raw))
    raw = json.dumps(base).encode()
    assert len(raw) == size
    return raw


# --- the envelope ------------------------------------------------------------------


@pytest.mark.parametrize("path", [INBOX, SYNC])
def test_validation_errors_carry_a_flat_details_map_with_the_requests_keys(client, token, path):
    body = assert_envelope(
        post_json(client, path, {"externalSystem": "x" * 33}, token=token),
        400,
        "invalid_payload",
        details=True,
    )
    assert "externalSystem" in body["details"] and "externalId" in body["details"]
    assert all(isinstance(value, str) for value in body["details"].values())


@pytest.mark.parametrize("path", [INBOX, SYNC])
def test_an_unsupported_method_is_a_json_405(client, token, path):
    response = client.get(path, headers={"Authorization": f"Bearer {token}"})
    assert_envelope(response, 405, "method_not_allowed")
    assert "POST" in response["Allow"]


def test_an_unknown_api_route_is_a_json_404(client):
    assert_envelope(client.post("/api/v1/nothing-here"), 404, "not_found")
    assert_envelope(client.get("/api/v1/inbox/"), 404, "not_found")


def test_an_accept_header_asking_for_html_still_gets_json(client, token):
    response = post_json(client, INBOX, inbox_body(), token=token, Accept="text/html")
    assert response.status_code == 201
    assert response["Content-Type"] == "application/json"


def test_a_disallowed_host_gets_json_not_an_html_page(client):
    response = client.post(
        INBOX, data="{}", content_type="application/json", headers={"Host": "evil.example"}
    )
    assert_envelope(response, 400, "bad_request")


def test_plain_http_off_loopback_is_refused_with_https_required(client, token, settings):
    settings.HTTPS_ONLY = True
    settings.ALLOWED_HOSTS = ["api.example.com", "localhost"]
    before = rows()
    response = post_json(client, INBOX, inbox_body(), token=token, Host="api.example.com")
    assert_envelope(response, 403, "https_required")
    assert rows() == before
    response = post_json(client, INBOX, inbox_body(), token=token, Host="localhost:3000")
    assert response.status_code == 201
    response = client.post(
        INBOX,
        data=json.dumps(inbox_body(externalId="2")),
        content_type="application/json",
        secure=True,
        headers={"Host": "api.example.com", "Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 201


def test_an_unexpected_failure_is_a_json_500_without_a_trace(client, token, monkeypatch):
    def explode(**kwargs):
        raise RuntimeError("database on fire at /secret/path.py line 42")

    monkeypatch.setattr(api.services, "commitment_create_pending", explode)
    response = post_json(client, INBOX, inbox_body(), token=token)
    body = assert_envelope(response, 500, "internal_error", details=False)
    assert "fire" not in json.dumps(body) and "Traceback" not in response.content.decode()


SERVICE_ERRORS = [
    (
        DuplicateExternalRef(),
        409,
        {
            "error": "duplicate_external_ref",
            "message": "A commitment with this externalSystem and externalId already exists "
            "for this assigner.",
        },
    ),
    (CommitmentNotFound(), 404, {"error": "not_found", "message": "No such commitment."}),
    # The token API never tells a caller about a commitment it may not act on.
    (
        NotPermitted(action="complete", reason="only the assignee"),
        404,
        {"error": "not_found", "message": "No such commitment."},
    ),
    (
        InvalidTransition(action="complete", current_status="Refused"),
        409,
        {
            "error": "invalid_transition",
            "message": "Cannot complete a commitment whose status is Refused.",
            "details": {"currentStatus": "Refused"},
        },
    ),
]


@pytest.mark.parametrize(("error", "status", "body"), SERVICE_ERRORS)
def test_a_domain_error_from_a_service_is_answered_in_the_envelope(
    client, token, monkeypatch, error, status, body
):
    def refuse(**kwargs):
        raise error

    monkeypatch.setattr(api.services, "commitment_complete", refuse)
    sync = {"externalSystem": "jira", "externalId": "OPS-42", "status": "Completed"}
    response = post_json(client, SYNC, sync, token=token)
    assert_envelope(response, status, body["error"])
    assert response.json() == body


# --- 413 -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [INBOX, SYNC])
def test_a_body_over_one_mib_is_payload_too_large(client, token, path):
    before = rows()
    response = client.post(
        path,
        data=_padded_inbox_body(LIMIT + 1),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert_envelope(response, 413, "payload_too_large", details=False)
    assert rows() == before


def test_a_body_of_exactly_one_mib_is_read(client, token):
    response = client.post(
        INBOX,
        data=_padded_inbox_body(LIMIT),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 201


def test_payload_too_large_is_decided_before_the_token(client):
    response = client.post(INBOX, data=b"x" * (LIMIT + 1), content_type="application/json")
    assert_envelope(response, 413, "payload_too_large")


def test_a_declared_length_over_the_limit_is_refused_unread(client):
    # The client lies: it declares 2 MiB and sends two bytes. No read is attempted.
    response = client.generic(
        "POST", INBOX, data=b"{}", content_type="application/json", CONTENT_LENGTH=str(2 * LIMIT)
    )
    assert_envelope(response, 413, "payload_too_large")


def _asgi_request(body: bytes, *, content_length: int | None = None) -> ASGIRequest:
    headers = [(b"content-type", b"application/json"), (b"host", b"localhost")]
    if content_length is not None:
        headers.append((b"content-length", str(content_length).encode()))
    scope = {
        "type": "http",
        "method": "POST",
        "path": INBOX,
        "query_string": b"",
        "headers": headers,
        "server": ("localhost", 3000),
        "client": ("127.0.0.1", 1),
    }
    return ASGIRequest(scope, io.BytesIO(body))


def test_a_body_that_turns_out_larger_while_reading_is_refused():
    # Under ASGI a chunked body arrives without a Content-Length; the limit holds anyway.
    reached: list[bool] = []
    middleware = ApiErrorMiddleware(lambda request: reached.append(True) or HttpResponse())
    response = middleware(_asgi_request(b" " * (LIMIT + 1)))
    assert response.status_code == 413
    assert json.loads(response.content)["error"] == "payload_too_large"
    assert reached == []


def test_a_body_within_the_limit_reaches_the_view_intact():
    seen: list[bytes] = []
    middleware = ApiErrorMiddleware(lambda request: seen.append(request.body) or HttpResponse())
    payload = b'{"a": "' + b"x" * 1000 + b'"}'
    assert middleware(_asgi_request(payload)).status_code == 200
    assert seen == [payload]


# --- chunked bodies (no Content-Length) under WSGI -----------------------------------


def _chunked_wsgi_request(body: bytes, *, terminated: bool) -> WSGIRequest:
    environ = RequestFactory()._base_environ(  # type: ignore[attr-defined]  # Django's private environ builder, not in the stubs
        PATH_INFO=INBOX,
        REQUEST_METHOD="POST",
        CONTENT_TYPE="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
    )
    environ.pop("CONTENT_LENGTH", None)
    environ["wsgi.input"] = io.BytesIO(body)
    if terminated:
        environ["wsgi.input_terminated"] = True
    return WSGIRequest(environ)


def test_a_chunked_body_reaches_the_view_when_the_server_ends_the_stream():
    seen: list[bytes] = []
    middleware = ApiErrorMiddleware(lambda request: seen.append(request.body) or HttpResponse())
    payload = json.dumps(inbox_body()).encode()
    assert middleware(_chunked_wsgi_request(payload, terminated=True)).status_code == 200
    assert seen == [payload]


def test_a_chunked_body_over_the_limit_is_refused():
    reached: list[bool] = []
    middleware = ApiErrorMiddleware(lambda request: reached.append(True) or HttpResponse())
    request = _chunked_wsgi_request(b" " * (LIMIT + 1), terminated=True)
    response = middleware(request)
    assert response.status_code == 413 and reached == []


def test_a_chunked_body_a_server_cannot_end_is_refused_clearly_not_read_as_empty():
    reached: list[bool] = []
    middleware = ApiErrorMiddleware(lambda request: reached.append(True) or HttpResponse())
    response = middleware(_chunked_wsgi_request(b"{}", terminated=False))
    body = json.loads(response.content)
    assert response.status_code == 400 and body["error"] == "invalid_payload"
    assert "Content-Length" in body["message"] and reached == []


@pytest.mark.processes
@pytest.mark.postgres
def test_under_gunicorn_a_chunked_inbox_call_creates_the_commitment(tmp_path, token):
    import http.client

    from commitments.models import Commitment
    from tests.harness.services import Process, free_port, subprocess_env

    port = free_port()
    env = subprocess_env(tmp_path, DEBUG="1")
    server = Process(
        [
            *(str(Path(sys.executable).parent / "gunicorn"), "config.wsgi:application"),
            *("--bind", f"127.0.0.1:{port}", "--workers", "1"),
        ],
        env,
        tmp_path / "gunicorn.log",
    )
    payload = json.dumps(inbox_body(description="Sent in chunks")).encode()
    with server:
        server.wait_for_output("Booting worker")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for _ in range(50):  # the worker may still be importing the project
            try:
                connection.connect()
                break
            except ConnectionRefusedError:
                time.sleep(0.1)
        connection.request(
            "POST",
            INBOX,
            body=iter([payload[:40], payload[40:]]),
            headers={
                "Host": "localhost",
                "Content-Type": "application/json",
                "Authorization": f"Bearer {token}",
            },
            encode_chunked=True,
        )
        response = connection.getresponse()
        answer = json.loads(response.read())
        connection.close()
    assert response.status == 201, answer
    assert Commitment.objects.get(pk=answer["id"]).description == "Sent in chunks"
