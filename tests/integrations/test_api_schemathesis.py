"""Schemathesis against the live app (in-process WSGI, the test database): generated
valid and invalid requests to every operation never get a 5xx, and every
response keeps to the document (documented status, content type, headers and
body schema). Bounded: a few dozen examples per operation and mode, derandomized
so a failure reproduces."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from schemathesis import GenerationMode

from tests.harness.api import mint
from tests.harness.openapi import CHECKS, WSGIApp

EXAMPLES_PER_MODE = 40


@pytest.fixture
def schema(db):
    return schemathesis.openapi.from_wsgi("/api-reference/openapi.json", WSGIApp())


@pytest.fixture
def token(make_user):
    # The owner and the assignee of the documented request example exist, so the
    # example itself reaches 201 (and then 409); generated e-mails mostly do not.
    owner = make_user("assigner@example.com")
    make_user("assignee@example.com")
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
