"""Schemathesis against the live app (in-process WSGI, the test database): generated
valid and invalid requests to every operation never get a 5xx, and every
response keeps to the document (documented status, content type, headers and
body schema). Bounded: a few dozen examples per operation and mode, derandomized
so a failure reproduces."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.integrations.api_support import mint

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
EXAMPLES_PER_MODE = 40


class _TestWSGIApp:
    """Django's WSGI handler, minus the end-of-request connection cleanup: that
    would close the test's connection in the middle of its transaction (Django's
    own test client disconnects it the same way)."""

    def __init__(self) -> None:
        self.handler = WSGIHandler()

    def __call__(self, environ, start_response):
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        try:
            response = self.handler(environ, start_response)
            try:
                return [b"".join(response)]
            finally:
                response.close()  # fires request_finished while it is disconnected
        finally:
            request_started.connect(close_old_connections)
            request_finished.connect(close_old_connections)


@pytest.fixture
def schema(db):
    return schemathesis.openapi.from_wsgi("/api-reference/openapi.json", _TestWSGIApp())


@pytest.fixture
def token(make_user):
    # The owner and the assignee of the documented request example exist, so the
    # example itself reaches 201 (and then 409); generated e-mails mostly do not.
    owner = make_user("lead@example.com")
    make_user("knight@example.com")
    return mint(owner)


def _operations(schema):
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {(op.method.upper(), op.path) for op in operations} >= {
        ("POST", "/api/v1/inbox"),
        ("POST", "/api/v1/sync"),
    }
    # The bearer-token operations; a tracker hook (/api/v1/hooks/...) takes no
    # token but its tracker's signature (tests/trackers/test_openapi.py).
    return [
        op
        for op in operations
        if op.path.startswith("/api/v1/") and not op.path.startswith("/api/v1/hooks/")
    ]


def test_generated_requests_get_no_server_error_and_only_documented_responses(schema, token):
    auth = {"Authorization": f"Bearer {token}"}
    calls = 0
    for operation in _operations(schema):
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
                nonlocal calls
                case.call_and_validate(headers=auth, checks=CHECKS)
                calls += 1

            run()
    assert calls >= 2 * EXAMPLES_PER_MODE


@pytest.mark.parametrize("bad_authorization", [None, "Bearer svc_nope", "Basic abc"])
def test_the_documented_examples_keep_to_the_document(schema, token, bad_authorization):
    headers = {"Authorization": bad_authorization or f"Bearer {token}"}
    statuses = []
    for operation in _operations(schema):
        content = operation.definition.raw["requestBody"]["content"]["application/json"]
        for example in content["examples"].values():
            for _ in range(2):  # the second inbox call is the duplicate
                case = operation.Case(body=example["value"], media_type="application/json")
                response = case.call_and_validate(headers=headers, checks=CHECKS)
                statuses.append(response.status_code)
    if bad_authorization is None:
        assert statuses == [201, 409, 409, 409]  # inbox twice; sync: still Pending_Handshake
    else:
        assert statuses == [401] * 4
