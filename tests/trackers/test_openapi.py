"""The hook in the OpenAPI document: one operation, its path parameter, no
bearer token, the answers it gives; and a delivery's answer keeps to it."""

from __future__ import annotations

import pytest
from openapi_spec_validator import validate

from tests.harness.tracker_payloads import issues_event
from tests.harness.trackers import connect, deliver

pytestmark = pytest.mark.django_db
PATH = "/api/v1/hooks/{hook_id}"


@pytest.fixture
def document(client):
    return client.get("/api-reference/openapi.json").json()


def test_the_hook_is_one_documented_operation(document):
    validate(document)
    operation = document["paths"][PATH]["post"]
    assert list(document["paths"][PATH]) == ["post"]
    assert operation["operationId"] == "tracker_hook"
    # No bearer token: the tracker's signature, described in the text.
    assert not document.get("security")
    assert all(not requirement for requirement in operation.get("security", []))
    [parameter] = operation["parameters"]
    assert (parameter["name"], parameter["in"], parameter["required"]) == ("hook_id", "path", True)
    assert set(operation["responses"]) == {"200", "202", "400", "401", "413"}
    # GitHub's default content type beside JSON.
    assert set(operation["requestBody"]["content"]) == {
        "application/json",
        "application/x-www-form-urlencoded",
    }
    for header in ("X-Hub-Signature-256", "X-Gitlab-Token", "Linear-Signature", "X-Hub-Signature"):
        assert header in operation["description"]


def test_an_answer_has_the_documented_fields(client, document, assigner, assignee):
    connection, secret = connect(assigner, "github", **{"knight-gh": "knight@example.com"})
    body = deliver(client, connection, secret, issues_event("assigned")).json()
    schema = document["components"]["schemas"]["HookResult"]
    assert set(body) == set(schema["properties"])
    action = document["components"]["schemas"]["HookAction"]["properties"]
    assert set(body["actions"][0]) <= set(action)
