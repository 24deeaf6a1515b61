"""The tools' input schemas, read from the OpenAPI document the client was
generated from (commitments_client/openapi.json, written by the generator
beside the code): an operation's request body, or its path and query
parameters, turned from OpenAPI 3.0's dialect into plain JSON Schema. Nothing
here repeats a field of the API by hand, so a tool cannot ask for what the API
no longer takes."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

JsonObject = dict[str, Any]

# OpenAPI's own keywords that JSON Schema lacks or that say nothing to a caller.
_DROPPED = {"nullable", "example", "readOnly", "writeOnly", "xml", "externalDocs", "discriminator"}


@cache
def document() -> JsonObject:
    """The served OpenAPI document the generated client was made from."""
    text = resources.files("commitments_client").joinpath("openapi.json").read_text("utf-8")
    loaded: JsonObject = json.loads(text)
    return loaded


def operation(operation_id: str) -> JsonObject:
    """The operation object with this operationId."""
    for item in document()["paths"].values():
        for candidate in item.values():
            if isinstance(candidate, dict) and candidate.get("operationId") == operation_id:
                found: JsonObject = candidate
                return found
    raise LookupError(f"the OpenAPI document has no operation {operation_id!r}")


def _resolve(reference: str) -> JsonObject:
    if not reference.startswith("#/"):
        raise ValueError(f"only local references are supported: {reference}")
    node: Any = document()
    for part in reference[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    resolved: JsonObject = node
    return resolved


def json_schema(schema: JsonObject) -> JsonObject:
    """An OpenAPI 3.0 schema as JSON Schema: references inlined, `nullable`
    turned into a `null` type, a lone `allOf` (how drf-spectacular puts a
    description on a reference) merged into its parent."""
    if "$ref" in schema:
        merged = {**_resolve(schema["$ref"]), **{k: v for k, v in schema.items() if k != "$ref"}}
        return json_schema(merged)
    out: JsonObject = {}
    all_of = schema.get("allOf")
    lone = isinstance(all_of, list) and len(all_of) == 1
    if isinstance(all_of, list) and lone:
        out.update(json_schema(all_of[0]))
    for key, value in schema.items():
        if key in _DROPPED or (key == "allOf" and lone):
            continue
        if key == "properties":
            out[key] = {name: json_schema(sub) for name, sub in value.items()}
        elif key in {"items", "additionalProperties", "not"} and isinstance(value, dict):
            out[key] = json_schema(value)
        elif key in {"allOf", "anyOf", "oneOf"}:
            out[key] = [json_schema(sub) for sub in value]
        else:
            out[key] = value
    if schema.get("nullable"):
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        elif "enum" not in out:
            out = {"anyOf": [out, {"type": "null"}]}
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    return out


def request_body(operation_id: str, *, leave_out: tuple[str, ...] = ()) -> JsonObject:
    """The operation's JSON request body as an object schema, without the
    properties `leave_out` names (those the tool fills in itself)."""
    body = operation(operation_id)["requestBody"]["content"]["application/json"]["schema"]
    schema = json_schema(body)
    for name in leave_out:
        schema.get("properties", {}).pop(name, None)
        if name in schema.get("required", []):
            schema["required"] = [r for r in schema["required"] if r != name]
    return schema


def parameters(operation_id: str) -> JsonObject:
    """The operation's path and query parameters as one object schema."""
    properties: JsonObject = {}
    required: list[str] = []
    for parameter in operation(operation_id).get("parameters", []):
        if "$ref" in parameter:
            parameter = _resolve(parameter["$ref"])
        if parameter.get("in") not in {"path", "query"}:
            continue
        prop = json_schema(parameter.get("schema", {}))
        if parameter.get("description") and "description" not in prop:
            prop["description"] = parameter["description"]
        properties[parameter["name"]] = prop
        if parameter.get("required"):
            required.append(parameter["name"])
    schema: JsonObject = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema
