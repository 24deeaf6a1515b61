"""The OpenAPI reference: a valid 3.0.3 document, version 1.0.0, generated from the
views' own serializers; Swagger UI served from our own static files; v2 reserved."""

from __future__ import annotations

import re

import pytest
import yaml
from django.contrib.staticfiles import finders
from openapi_spec_validator import validate

from commitments.models import DESCRIPTION_MAX, EXTERNAL_ID_MAX, EXTERNAL_SYSTEM_MAX, Status
from integrations.serializers import InboxSerializer, SyncSerializer
from lib.text import TEXT_PATTERN

OPERATIONS = {
    ("/api/v1/inbox", "post"): {"201", "400", "401", "403", "409", "413", "429", "500"},
    ("/api/v1/sync", "post"): {
        "200",
        "400",
        "401",
        "403",
        "404",
        "409",
        "413",
        "429",
        "500",
        "503",
    },
}


@pytest.fixture
def document(client, db):
    response = client.get("/api-reference/openapi.json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    return response.json()


def test_the_document_is_valid_openapi_3_0_3_version_1_0_0(document):
    validate(document)
    assert document["openapi"] == "3.0.3"
    assert document["info"]["version"] == "1.0.0"


def test_the_yaml_download_is_the_same_document(client, document):
    response = client.get("/api-reference/openapi.yaml")
    assert response.status_code == 200
    assert "yaml" in response["Content-Type"] or "openapi" in response["Content-Type"]
    assert yaml.safe_load(response.content) == document


def test_both_security_schemes_are_declared(document):
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearerAuth"]["type"] == "http"
    assert schemes["bearerAuth"]["scheme"] == "bearer"
    assert schemes["cookieAuth"] == {"type": "apiKey", "in": "cookie", "name": "sessionid"}


@pytest.mark.parametrize(("path", "method"), list(OPERATIONS))
def test_each_operation_documents_every_response_it_can_give(document, path, method):
    operation = document["paths"][path][method]
    assert operation["security"] == [{"bearerAuth": []}]
    assert set(operation["responses"]) == OPERATIONS[(path, method)]
    assert operation["requestBody"]["content"]["application/json"]["examples"]
    for status, response in operation["responses"].items():
        content = response["content"]["application/json"]
        assert content["examples"], f"{status} has no example"
        if status.startswith(("4", "5")):
            assert content["schema"] == {"$ref": "#/components/schemas/ErrorEnvelope"}
            for example in content["examples"].values():
                assert f"`{example['value']['error']}`" in response["description"]
    assert operation["responses"]["401"]["headers"]["WWW-Authenticate"]["required"] is True
    assert operation["responses"]["429"]["headers"]["Retry-After"]["required"] is True
    assert operation["responses"]["429"]["headers"]["Retry-After"]["schema"]["type"] == "integer"


def test_the_error_names_of_the_contract_are_documented(document):
    inbox = document["paths"]["/api/v1/inbox"]["post"]["responses"]
    sync = document["paths"]["/api/v1/sync"]["post"]["responses"]

    def names(responses, status):
        return {
            e["value"]["error"]
            for e in responses[status]["content"]["application/json"]["examples"].values()
        }

    assert names(inbox, "400") == {"invalid_payload", "bad_request"}
    assert names(sync, "400") == {"invalid_payload", "bad_request"}
    assert names(inbox, "500") == names(sync, "500") == {"internal_error"}
    assert names(inbox, "401") == {"unauthorized"}
    assert names(inbox, "403") == {"forbidden", "https_required"}
    assert names(inbox, "409") == {"duplicate_external_ref"}
    assert names(inbox, "413") == {"payload_too_large"}
    assert names(sync, "403") == {"forbidden", "https_required"}
    assert names(sync, "404") == {"not_found"}
    assert names(sync, "409") == {"invalid_transition"}
    assert names(inbox, "429") == names(sync, "429") == {"rate_limited"}


def test_the_error_envelope_component(document):
    envelope = document["components"]["schemas"]["ErrorEnvelope"]
    assert set(envelope["properties"]) == {"error", "message", "details"}
    assert set(envelope["required"]) == {"error", "message"}


def test_the_request_schemas_are_the_views_serializers(document):
    schemas = document["components"]["schemas"]
    inbox, sync = schemas["InboxRequest"], schemas["SyncRequest"]
    assert set(inbox["properties"]) == set(InboxSerializer().fields)
    assert set(inbox["required"]) == set(InboxSerializer().fields)
    assert set(sync["properties"]) == set(SyncSerializer().fields)
    props = inbox["properties"]
    assert (props["description"]["minLength"], props["description"]["maxLength"]) == (
        1,
        DESCRIPTION_MAX,
    )
    for name in ("description", "externalSystem", "externalId"):
        # Blank after trimming is refused, and NUL: the schema says so with a pattern.
        assert props[name]["pattern"] == TEXT_PATTERN, name
    assert props["externalSystem"]["maxLength"] == EXTERNAL_SYSTEM_MAX
    assert props["externalId"]["maxLength"] == EXTERNAL_ID_MAX
    assert props["deadline"]["format"] == "date-time" and props["deadline"]["nullable"] is True
    assert props["assigneeEmail"]["format"] == "email"
    status_enum = schemas["SyncTargetStatusEnum"]["enum"]
    assert status_enum == ["Completed"]


def test_the_reference_page_is_swagger_ui_served_from_our_own_static_files(client, db):
    response = client.get("/api-reference")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    # The start-up script is served from a URL of its own (no inline script
    # under the Content-Security-Policy, tests/config/test_csp.py).
    script = client.get("/api-reference?script=").content.decode().replace("\\u002D", "-")
    assert "SwaggerUIBundle" in script
    assert '"/api-reference/openapi.json"' in script
    # What the page loads (scripts, stylesheets, the icon), not its links.
    assets = re.findall(r'(?:<script[^>]*\ssrc|<link[^>]*\shref)="([^"]+)"', html)
    assert assets
    assets.remove("/api-reference?script=")
    for asset in assets:
        assert asset.startswith("/static/"), asset
        assert finders.find(asset.removeprefix("/static/")), f"{asset} is not a local file"
    assert not re.search(r"https?://(?!localhost)", html.replace("http://www.w3.org", ""))


@pytest.mark.parametrize(
    "path", ["/api-reference/v2", "/api-reference/v2/", "/api-reference/v2/openapi.json"]
)
def test_version_2_is_reserved(client, db, path):
    assert client.get(path).status_code == 404


# --- POST /api/gather ---------------------------------------------------------------


def test_gather_is_documented_with_the_session_cookie_and_every_answer(document):
    operation = document["paths"]["/api/gather"]["post"]
    assert operation["security"] == [{"cookieAuth": []}]
    assert set(operation["responses"]) == {"200", "400", "401", "403", "413", "429", "502"}
    assert operation["requestBody"]["content"]["application/json"]["examples"]
    for status, response in operation["responses"].items():
        content = response["content"]["application/json"]
        assert content["examples"], f"{status} has no example"
        if status.startswith(("4", "5")):
            assert content["schema"] == {"$ref": "#/components/schemas/ErrorEnvelope"}
            for example in content["examples"].values():
                assert f"`{example['value']['error']}`" in response["description"]
    retry_after = operation["responses"]["429"]["headers"]["Retry-After"]
    assert retry_after["required"] is True and retry_after["schema"]["type"] == "integer"
    names = {
        e["value"]["error"]
        for e in operation["responses"]["400"]["content"]["application/json"]["examples"].values()
    }
    assert names == {"invalid_payload", "no_byok_key", "bad_request"}


def test_gather_says_each_call_costs_a_real_upstream_call(document):
    operation = document["paths"]["/api/gather"]["post"]
    assert "costs a real upstream call" in operation["description"]
    assert "Try it out" in operation["description"]
    assert "X-CSRFToken" in operation["description"]
    assert "not built yet" not in document["info"]["description"]
    assert "real upstream call" in document["info"]["description"]


def test_gather_request_and_response_schemas(document):
    schemas = document["components"]["schemas"]
    text = schemas["GatherRequest"]["properties"]["text"]
    assert (text["minLength"], text["maxLength"]) == (1, 100_000)
    assert schemas["GatherRequest"]["required"] == ["text"]
    result = schemas["GatherResult"]
    assert set(result["properties"]) == {"drafts", "model", "usage", "refusal"}
    assert set(result["required"]) == {"drafts", "model", "usage", "refusal"}
    assert result["properties"]["refusal"]["type"] == "string"
    assert result["properties"]["refusal"]["nullable"] is True
    draft = schemas["Draft"]["properties"]
    assert set(draft) == {
        "description",
        "assigneeName",
        "assigneeEmail",
        "deadline",
        "deadlineText",
        "confidence",
        "sourceQuote",
    }
    assert set(schemas["Usage"]["properties"]) == {"inputTokens", "outputTokens"}


def test_gather_documents_a_refusal_as_a_200_with_no_drafts(document):
    operation = document["paths"]["/api/gather"]["post"]
    examples = operation["responses"]["200"]["content"]["application/json"]["examples"]
    refusals = [e["value"] for e in examples.values() if e["value"]["refusal"]]
    assert [r["drafts"] for r in refusals] == [[]]
    assert "declines" in operation["description"]
    assert "refusal" not in operation["responses"]["502"]["description"].split(";")[0]


def test_try_it_out_sends_the_csrf_header_from_the_cookie(client, db):
    script = client.get("/api-reference?script=").content.decode().replace("\\u002D", "-")
    assert "requestInterceptor" in script
    # Django's header name (CSRF_HEADER_NAME), read from the cookie at call time.
    assert 'request.headers["X-CSRFTOKEN"] = csrfCookie()' in script
    assert 'const prefix = "csrftoken=";' in script
    assert "sameOrigin" in script


# --- the read API ---------------------------------------------------------------------

READS = {
    ("/api/v1/commitments", "commitments_list"): {"200", "304", "400", "401", "403", "429", "500"},
    ("/api/v1/commitments/{id}", "commitments_retrieve"): {
        "200",
        "304",
        "400",
        "401",
        "403",
        "404",
        "429",
        "500",
    },
}


@pytest.mark.parametrize(("path", "operation_id"), list(READS))
def test_each_read_is_documented_with_its_answers_etag_and_stable_names(
    document, path, operation_id
):
    operation = document["paths"][path]["get"]
    assert operation["operationId"] == operation_id
    assert operation["tags"] == ["Read API"]
    assert operation["security"] == [{"bearerAuth": []}]
    assert "requestBody" not in operation
    assert set(operation["responses"]) == READS[(path, operation_id)]
    for status, response in operation["responses"].items():
        if status == "304":
            assert "content" not in response  # no body
            continue
        content = response["content"]["application/json"]
        assert content["examples"], f"{status} has no example"
        if status.startswith(("4", "5")):
            assert content["schema"] == {"$ref": "#/components/schemas/ErrorEnvelope"}
            for example in content["examples"].values():
                assert f"`{example['value']['error']}`" in response["description"]
    assert operation["responses"]["200"]["headers"]["ETag"]["required"] is True
    assert operation["responses"]["304"]["headers"]["ETag"]["required"] is True
    assert operation["responses"]["429"]["headers"]["Retry-After"]["required"] is True
    parameters = {(p["in"], p["name"]) for p in operation["parameters"]}
    assert ("header", "If-None-Match") in parameters
    forbidden = operation["responses"]["403"]["content"]["application/json"]["examples"]
    assert any("'read' scope" in e["value"]["message"] for e in forbidden.values())


def test_the_read_schemas_have_the_names_a_client_is_generated_from(document):
    schemas = document["components"]["schemas"]
    ok = document["paths"]["/api/v1/commitments/{id}"]["get"]["responses"]["200"]
    assert ok["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/CommitmentDetail"
    }
    page = document["paths"]["/api/v1/commitments"]["get"]["responses"]["200"]
    assert page["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/CommitmentPage"
    }
    fields = {
        "id", "status", "description", "deadline", "externalSystem", "externalId",
        "assignerEmail", "assigneeEmail", "createdAt", "updatedAt", "link",
    }  # fmt: skip
    assert set(schemas["Commitment"]["properties"]) == fields
    assert set(schemas["CommitmentDetail"]["properties"]) == fields | {"history"}
    assert set(schemas["CommitmentPage"]["properties"]) == {"results", "next"}
    assert set(schemas["HistoryEntry"]["properties"]) == {
        "status", "previousStatus", "at", "actorKind"
    }  # fmt: skip
    assert schemas["ActorKindEnum"]["enum"] == ["user", "api_token", "system"]
    # The statuses are the enumeration's, whatever it holds.
    assert schemas["CommitmentStatusEnum"]["enum"] == [s.value for s in Status]
    assert "NullEnum" not in schemas
    for name in ("deadline", "externalSystem", "externalId", "link"):
        assert schemas["Commitment"]["properties"][name]["nullable"] is True


def test_the_list_parameters_and_the_path_id_are_documented(document):
    listed = document["paths"]["/api/v1/commitments"]["get"]["parameters"]
    query = {p["name"]: p["schema"] for p in listed if p["in"] == "query"}
    assert set(query) == {
        "role", "status", "externalSystem", "externalId", "updatedSince", "limit", "cursor"
    }  # fmt: skip
    assert (query["limit"]["minimum"], query["limit"]["maximum"]) == (1, 100)
    assert query["limit"]["default"] == 50
    assert query["role"]["enum"] == ["assigner", "assignee"]
    assert query["updatedSince"]["format"] == "date-time"
    one = document["paths"]["/api/v1/commitments/{id}"]["get"]["parameters"]
    (path_id,) = [p for p in one if p["in"] == "path"]
    assert path_id["name"] == "id" and path_id["schema"]["format"] == "uuid"


def test_the_description_names_what_was_added_and_the_version_stays(document):
    assert document["info"]["version"] == "1.0.0" and document["openapi"] == "3.0.3"
    info = document["info"]["description"]
    assert "`GET /api/v1/commitments`" in info and "`GET /api/v1/commitments/{id}`" in info
    assert "`read` scope" in info
    scheme = document["components"]["securitySchemes"]["bearerAuth"]["description"]
    assert "`read`" in scheme
