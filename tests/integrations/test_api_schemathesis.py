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

from commitments.models import Commitment
from integrations.api_docs import EXAMPLE_ID
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


@pytest.fixture
def filled(token):
    """Commitments of the token's owner on both sides, so the reads have rows
    to answer with (a list page with `next`, histories, links)."""
    from audit.services import Actor
    from commitments import links, services
    from integrations.models import ApiToken

    owner = ApiToken.objects.get().user
    other = owner.__class__.objects.get(email="assignee@example.com")
    links.link_template_add(owner=owner, system="jira", template="https://x.example/{externalId}")
    for n in range(3):
        made = services.commitment_create_pending(
            actor=Actor.for_user(owner),
            assigner=owner,
            assignee=other,
            description=f"Generated {n}",
            deadline=None,
            external_system="jira",
            external_id=f"GEN-{n}",
        )
        services.commitment_accept(actor=Actor.for_user(other), commitment_id=made.pk)
    return owner


def _operations(schema):
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {(op.method.upper(), op.path) for op in operations} >= {
        ("POST", "/api/v1/inbox"),
        ("POST", "/api/v1/sync"),
        ("GET", "/api/v1/commitments"),
        ("GET", "/api/v1/commitments/{id}"),
    }
    # The bearer-token operations; a tracker hook (/api/v1/hooks/...) takes no
    # token but its tracker's signature (tests/trackers/test_openapi.py).
    return [
        op
        for op in operations
        if op.path.startswith("/api/v1/") and not op.path.startswith("/api/v1/hooks/")
    ]


def test_generated_requests_get_no_server_error_and_only_documented_responses(
    schema, token, filled
):
    auth = {"Authorization": f"Bearer {token}"}
    calls = 0
    for operation in _operations(schema):
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            # The token is given, not generated: a case whose only fault was a
            # missing Authorization header would reach the server with it.
            @given(case=operation.as_strategy(generation_mode=mode, headers=auth))
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
        if operation.method.upper() != "POST":
            continue
        content = operation.definition.raw["requestBody"]["content"]["application/json"]
        for example in content["examples"].values():
            for _ in range(2):  # the second inbox call is the duplicate
                case = operation.Case(body=example["value"], media_type="application/json")
                response = case.call_and_validate(headers=headers, checks=CHECKS)
                statuses.append(response.status_code)
    # The reads: the list as Try it out sends it (no parameter), the commitment
    # the inbox example made, and the documented example id (nobody's).
    made = list(Commitment.objects.values_list("pk", flat=True))
    reads = schema["/api/v1/commitments"]["GET"], schema["/api/v1/commitments/{id}"]["GET"]
    cases = [reads[0].Case()]
    cases += [reads[1].Case(path_parameters={"id": str(pk)}) for pk in made]
    cases.append(reads[1].Case(path_parameters={"id": EXAMPLE_ID}))
    for case in cases:
        statuses.append(case.call_and_validate(headers=headers, checks=CHECKS).status_code)
    if bad_authorization is None:
        # inbox twice; sync: still Pending_Handshake; the list, the new one, nobody's
        assert statuses == [201, 409, 409, 409, 200, 200, 404]
    else:
        assert statuses == [401] * 6
