"""The MCP server's tools, in-process: each input schema is the API's own,
read from the served OpenAPI document the client was generated from, and each
tool's arguments are exactly the generated operation's parameters (so neither
the tools nor the client can ask for what the API does not take)."""

from __future__ import annotations

import inspect
import re

from commitments_client.api.inbound_api import inbox_create, sync_status
from commitments_client.api.read_api import commitments_list, commitments_retrieve
from commitments_mcp import schemas
from commitments_mcp.tools import TOOLS

from tests.harness.api import inbox_body


def snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def test_there_are_four_tools_each_with_a_scope_and_a_description_to_act_on():
    assert set(TOOLS) == {
        "list_commitments",
        "get_commitment",
        "create_commitment",
        "complete_commitment",
    }
    scopes = {name: tool.scope for name, tool in TOOLS.items()}
    assert scopes == {
        "list_commitments": "read",
        "get_commitment": "read",
        "create_commitment": "inbox",
        "complete_commitment": "sync",
    }
    for tool in TOOLS.values():
        assert f"`{tool.scope}` scope" in tool.description
        assert len(tool.description) > 200


def test_the_schemas_are_the_documents_operations():
    document = schemas.document()
    inbox = document["components"]["schemas"]["InboxRequest"]
    create = TOOLS["create_commitment"].input_schema
    assert set(create["properties"]) == set(inbox["properties"]) == set(inbox_body())
    assert create["required"] == inbox["required"]
    for name, prop in create["properties"].items():
        assert prop["description"] == inbox["properties"][name]["description"]
    # OpenAPI's `nullable` as JSON Schema's null type.
    assert create["properties"]["deadline"]["type"] == ["string", "null"]
    assert "nullable" not in str(create)

    complete = TOOLS["complete_commitment"].input_schema
    assert set(complete["properties"]) == {"externalSystem", "externalId"}  # status: Completed

    listing = TOOLS["list_commitments"].input_schema
    query = {
        p["name"] for p in schemas.operation("commitments_list")["parameters"] if p["in"] == "query"
    }
    assert set(listing["properties"]) == query
    assert listing["properties"]["limit"]["maximum"] == 100
    assert TOOLS["get_commitment"].input_schema["required"] == ["id"]


def test_each_tools_arguments_are_the_generated_operations_parameters():
    """camelCase in the API, snake_case in the generated function: the same names."""
    generated = {
        "list_commitments": commitments_list.asyncio_detailed,
        "get_commitment": commitments_retrieve.asyncio_detailed,
    }
    for name, function in generated.items():
        parameters = set(inspect.signature(function).parameters) - {"client", "if_none_match"}
        assert {snake(p) for p in TOOLS[name].input_schema["properties"]} == parameters
    bodies = {"create_commitment": inbox_create, "complete_commitment": sync_status}
    for name, module in bodies.items():
        model = inspect.signature(module.asyncio_detailed).parameters["body"].annotation
        fields = set(inspect.signature(model).parameters)
        wanted = {snake(p) for p in TOOLS[name].input_schema["properties"]}
        assert wanted <= fields and fields - wanted <= {"status"}


def test_arguments_that_do_not_fit_the_schema_are_named():
    import pytest
    from commitments_mcp.tools import ToolFailure

    with pytest.raises(ToolFailure) as failure:
        TOOLS["create_commitment"].check(inbox_body(description="", deadline=5))
    assert "- deadline:" in str(failure.value) and "- description:" in str(failure.value)
    TOOLS["create_commitment"].check(inbox_body())
    TOOLS["create_commitment"].check(inbox_body(deadline=None))
