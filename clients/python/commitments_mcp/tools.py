"""The tools: what each one is for (the description an assistant reads), the
operation of the API it calls through the generated client, the scope that
operation needs, and its input schema, read from the OpenAPI document
(commitments_mcp.schemas). The API's refusals become tool errors that say
what to change."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import httpx
from commitments_client import AuthenticatedClient
from commitments_client.api.inbound_api import inbox_create, sync_status
from commitments_client.api.read_api import commitments_list, commitments_retrieve
from commitments_client.models import (
    CommitmentsListRole,
    CommitmentsListStatus,
    InboxRequest,
    SyncRequest,
    SyncTargetStatusEnum,
)
from commitments_client.types import UNSET, Response, Unset
from jsonschema import Draft202012Validator
from mcp_types import ToolAnnotations

from commitments_mcp import schemas

JsonObject = dict[str, Any]
Call = Callable[[AuthenticatedClient, JsonObject], Awaitable[Response[Any]]]

TOKENS_PAGE = "Settings, API tokens (/settings/tokens/)"


class ToolFailure(Exception):
    """A call that did not do what was asked; its message says what to fix."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    operation_id: str
    scope: str
    input_schema: JsonObject
    annotations: ToolAnnotations
    call: Call

    def check(self, arguments: JsonObject) -> None:
        """The arguments against the API's own schema, before any request."""
        validator = Draft202012Validator(self.input_schema)
        problems = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if problems:
            lines = [
                f"- {'.'.join(str(p) for p in error.absolute_path) or '(arguments)'}: "
                f"{error.message}"
                for error in problems
            ]
            raise ToolFailure(
                f"{self.name} was not called: fix these arguments and call it again "
                "(the tool's input schema is the API's):\n" + "\n".join(lines)
            )


# --- the calls, through the generated client ----------------------------------------


async def _create(client: AuthenticatedClient, arguments: JsonObject) -> Response[Any]:
    return await inbox_create.asyncio_detailed(
        client=client, body=InboxRequest.from_dict(arguments)
    )


async def _complete(client: AuthenticatedClient, arguments: JsonObject) -> Response[Any]:
    body = SyncRequest.from_dict({**arguments, "status": SyncTargetStatusEnum.COMPLETED.value})
    return await sync_status.asyncio_detailed(client=client, body=body)


async def _get(client: AuthenticatedClient, arguments: JsonObject) -> Response[Any]:
    try:
        commitment_id = uuid.UUID(arguments["id"])
    except ValueError as exc:
        raise ToolFailure(
            "get_commitment was not called: `id` must be a commitment's id (a UUID, as "
            "create_commitment and list_commitments answer it)."
        ) from exc
    return await commitments_retrieve.asyncio_detailed(commitment_id, client=client)


def _moment(text: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError as exc:
        raise ToolFailure(
            "list_commitments was not called: `updatedSince` must be an ISO-8601 date and "
            "time with `Z` or an offset, e.g. 2026-11-01T00:00:00Z."
        ) from exc


async def _list(client: AuthenticatedClient, arguments: JsonObject) -> Response[Any]:
    given = arguments.get
    role: CommitmentsListRole | Unset = UNSET
    status: CommitmentsListStatus | Unset = UNSET
    if "role" in arguments:
        role = CommitmentsListRole(arguments["role"])
    if "status" in arguments:
        status = CommitmentsListStatus(arguments["status"])
    return await commitments_list.asyncio_detailed(
        client=client,
        role=role,
        status=status,
        external_system=given("externalSystem", UNSET),
        external_id=given("externalId", UNSET),
        updated_since=(
            _moment(arguments["updatedSince"]) if "updatedSince" in arguments else UNSET
        ),
        limit=given("limit", UNSET),
        cursor=given("cursor", UNSET),
    )


# --- the tools ----------------------------------------------------------------------


def _tools() -> list[ToolSpec]:
    return [
        ToolSpec(
            name="list_commitments",
            title="List commitments",
            description=(
                "List the commitments of this token's owner, as the one who asked (role "
                "`assigner`) or the one asked (role `assignee`), newest change first "
                "(GET /api/v1/commitments). Every filter is optional and they combine: role, "
                "status (`Pending_Handshake` waits for the assignee to accept, `Active` is "
                "accepted, then `Completed`; `Refused` is declined), externalSystem with "
                "externalId (the commitments of one external reference, e.g. jira / OPS-42), "
                "updatedSince (ISO-8601 with `Z` or an offset). Answers `results` and, when "
                "there are more, `nextCursor`: call again with the same filters and "
                "`cursor` set to it for the next page (null on the last page). `limit` is "
                "1..100 rows a page, 50 by default. Needs the token's `read` scope."
            ),
            operation_id="commitments_list",
            scope="read",
            input_schema=schemas.parameters("commitments_list"),
            annotations=ToolAnnotations(read_only_hint=True),
            call=_list,
        ),
        ToolSpec(
            name="get_commitment",
            title="Get one commitment",
            description=(
                "Read one commitment of this token's owner by its id (as create_commitment "
                "or list_commitments answer it), with its status, deadline, external "
                "reference, both people's addresses and its `history`: each status change "
                "with when and what kind of actor made it (GET /api/v1/commitments/{id}). "
                "Someone else's commitment is not found. Needs the token's `read` scope."
            ),
            operation_id="commitments_retrieve",
            scope="read",
            input_schema=schemas.parameters("commitments_retrieve"),
            annotations=ToolAnnotations(read_only_hint=True),
            call=_get,
        ),
        ToolSpec(
            name="create_commitment",
            title="Create a commitment",
            description=(
                "Record that someone (the assignee) is asked to do something, as the API's "
                "inbox does (POST /api/v1/inbox). The assigner is the person whose token this "
                "server uses: assignerEmail must be their address. The assignee must already "
                "have an account; they are nudged to accept or decline. externalSystem and "
                "externalId are the reference in the tool the request comes from (e.g. `jira` "
                "and `OPS-42`): each assigner may use a reference once, and "
                "complete_commitment finds the commitment by it later. deadline is an ISO-8601 "
                "date and time with `Z` or an offset (`2026-12-01T17:00:00Z`), or null for "
                "none. Answers the new commitment's id. Needs the token's `inbox` scope."
            ),
            operation_id="inbox_create",
            scope="inbox",
            input_schema=schemas.request_body("inbox_create"),
            annotations=ToolAnnotations(
                read_only_hint=False, destructive_hint=False, idempotent_hint=False
            ),
            call=_create,
        ),
        ToolSpec(
            name="complete_commitment",
            title="Complete a commitment",
            description=(
                "Mark as completed the commitment that this token's owner assigned under an "
                "external reference (externalSystem and externalId, as given when it was "
                "created), as the API's sync does (POST /api/v1/sync with status `Completed`). "
                "Only an accepted commitment can be completed; completing one already "
                "completed changes nothing (changed: false). Needs the token's `sync` scope."
            ),
            operation_id="sync_status",
            scope="sync",
            input_schema=schemas.request_body("sync_status", leave_out=("status",)),
            annotations=ToolAnnotations(
                read_only_hint=False, destructive_hint=False, idempotent_hint=True
            ),
            call=_complete,
        ),
    ]


TOOLS: dict[str, ToolSpec] = {tool.name: tool for tool in _tools()}


# --- answers and refusals -----------------------------------------------------------


def _body(response: Response[Any]) -> Any:
    try:
        return json.loads(response.content) if response.content else None
    except ValueError:
        return None


def explain(tool: ToolSpec, arguments: JsonObject, response: Response[Any]) -> str:
    """What the API's refusal means for the caller, and what to change."""
    status = int(response.status_code)
    body = _body(response)
    envelope: JsonObject = body if isinstance(body, dict) else {}
    error = envelope.get("error", HTTPStatus(status).phrase)
    message = envelope.get("message", "")
    details = envelope.get("details") or {}
    lines = [f"{tool.name} failed: the API answered {status} {error}: {message}".rstrip(": ")]
    if status == 400 and details:
        lines.append("Fix these arguments and call it again:")
        lines += [f"- {field}: {text}" for field, text in details.items()]
    elif status == 401:
        lines.append(
            "The API token is missing, unknown or revoked: set COMMITMENTS_TOKEN to a valid "
            f"token (mint one on {TOKENS_PAGE}) and restart this server."
        )
    elif status == 403 and "scope" in message:
        lines.append(
            f"{tool.name} needs a token with the `{tool.scope}` scope, which this token "
            f"lacks. Mint a token with the `{tool.scope}` scope on {TOKENS_PAGE} and set "
            "COMMITMENTS_TOKEN to it; retrying with this token will fail the same way."
        )
    elif status == 403:
        lines.append(
            "Retrying the same call will fail the same way; change what the message names."
        )
    elif status == 404:
        lines.append(
            "No commitment of this token's owner matches: check the id or the external "
            "reference (list_commitments shows what this token can see)."
        )
    elif status == 409 and error == "duplicate_external_ref":
        lines.append(
            f"A commitment with externalSystem {arguments.get('externalSystem')!r} and "
            f"externalId {arguments.get('externalId')!r} already exists for this assigner: "
            "do not create it again; find it with list_commitments (externalSystem, "
            "externalId), or create it under another reference if it is a different request."
        )
    elif status == 409 and error == "invalid_transition":
        current = details.get("currentStatus")
        lines.append(
            f"The commitment is {current or 'in another status'}: only an accepted "
            "commitment can be completed (the assignee accepts it first)."
        )
    elif status == 429:
        wait = response.headers.get("Retry-After", "a few")
        lines.append(f"Too many calls: wait {wait} seconds before calling again.")
    elif status >= 500:
        lines.append("The service failed on its side; calling again later is safe.")
    return "\n".join(lines)


async def run(tool: ToolSpec, client: AuthenticatedClient, arguments: JsonObject) -> JsonObject:
    """Call the tool's operation; its JSON answer, or ToolFailure saying what to fix."""
    tool.check(arguments)
    try:
        response = await tool.call(client, arguments)
    except httpx.HTTPError as exc:
        raise ToolFailure(
            f"{tool.name} failed: the service at COMMITMENTS_URL could not be reached "
            f"({type(exc).__name__}: {exc}). Check COMMITMENTS_URL and that the service runs."
        ) from exc
    if int(response.status_code) >= 400:
        raise ToolFailure(explain(tool, arguments, response))
    body = _body(response)
    answer: JsonObject = body if isinstance(body, dict) else {"result": body}
    if "next" in answer:  # a page: the cursor to pass back for the next one
        answer["nextCursor"] = _cursor(answer["next"])
    return answer


def _cursor(next_url: Any) -> str | None:
    if not isinstance(next_url, str):
        return None
    values = httpx.URL(next_url).params.get_list("cursor")
    return values[0] if values else None
