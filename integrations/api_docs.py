"""The OpenAPI document of the public API, kept out of the views: the bearer
security scheme, the documented error responses (one envelope, named errors,
examples), the `WWW-Authenticate` header of every documented 401, and each
operation's texts and examples as an `extend_schema` decorator for its view."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
)

from integrations.serializers import (
    LIMIT_MAX,
    CommitmentDetailSerializer,
    CommitmentListQuerySerializer,
    CommitmentPageSerializer,
    InboxCreatedSerializer,
    InboxSerializer,
    SyncResultSerializer,
    SyncSerializer,
)
from lib.api_errors import error_example, error_response


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "integrations.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "svc_…",
            "description": (
                "`Authorization: Bearer <API token>`. Mint a token on Settings, API Tokens; "
                "its plaintext (`svc_` followed by 36 letters and digits) is shown once.\n\n"
                "A token has scopes, the operations it may call: `inbox` "
                "(`POST /api/v1/inbox`), `sync` (`POST /api/v1/sync`) and `read` "
                "(`GET /api/v1/commitments` and `GET /api/v1/commitments/{id}`): all three unless "
                "its owner chose fewer (tokens minted before `read` existed keep the scopes they "
                "had). It may also be limited to client networks (CIDR, IPv4 or IPv6), "
                "the client's address taken as the service's trusted-proxy settings say. A call "
                "outside its scopes or from another address is `403 forbidden`, the message "
                "naming the missing scope or the refused address; nothing is done, and the "
                "call does not count as the token's use."
            ),
        }


INVALID_PAYLOAD_WRONG_TYPE = error_example(
    "Not JSON",
    "invalid_payload",
    "The request body must be JSON (Content-Type: application/json).",
    body="Unsupported content type 'text/plain'.",
)
INVALID_PAYLOAD_NOT_OBJECT = error_example(
    "Not an object",
    "invalid_payload",
    "The request body must be a JSON object.",
    body="Expected a JSON object.",
)

# The same for an address nobody has, one not verified, and a deactivated user's:
# the answer must not tell a caller which addresses are registered.
ASSIGNEE_UNKNOWN = "No user can receive commitments at this e-mail address."

# A response header, declared as drf-spectacular does: a parameter with `response`.
AUTH_CHALLENGE = OpenApiParameter(
    "WWW-Authenticate",
    type={"type": "string", "example": "Bearer"},
    location=OpenApiParameter.HEADER,
    required=True,
    description="The authentication scheme to use: `Bearer`.",
    response=[401],
)
UNAUTHORIZED = error_response(
    "`unauthorized`: the bearer token is missing, malformed, unknown, revoked or expired. "
    "Comes with `WWW-Authenticate: Bearer`.",
    error_example("Missing token", "unauthorized", "Authentication credentials were not provided."),
    error_example(
        "Unknown, revoked or expired token",
        "unauthorized",
        "The bearer token is not valid (unknown, revoked or expired).",
    ),
)
BAD_HOST = error_example("Unknown host", "bad_request", "The request was refused.")
BAD_HOST_DESCRIPTION = (
    " `bad_request`: the `Host` header names no host this service answers to (`ALLOWED_HOSTS`)."
)
INTERNAL_ERROR = error_response(
    "`internal_error`: something failed on the service's side. Retrying is safe: if the "
    "first call was stored after all, a replayed inbox call answers "
    "`409 duplicate_external_ref` and a replayed sync `200` with `changed: false`.",
    error_example("Server error", "internal_error", "Something went wrong on our side."),
)
HTTPS_REQUIRED = error_example(
    "Plain HTTP", "https_required", "This API is served over HTTPS only."
)
PAYLOAD_TOO_LARGE = error_response(
    "`payload_too_large`: the request body is larger than 1 MiB (1,048,576 bytes).",
    error_example(
        "Too large", "payload_too_large", "The request body is larger than 1048576 bytes."
    ),
)


RETRY_AFTER = OpenApiParameter(
    "Retry-After",
    type={"type": "integer", "minimum": 1, "example": 12},
    location=OpenApiParameter.HEADER,
    required=True,
    description="Whole seconds until the token may call again.",
    response=[429],
)
RATE_LIMITED = error_response(
    "`rate_limited`: this token has spent its calls for now (the per-token limit, shared by "
    "`POST /api/v1/inbox` and `POST /api/v1/sync`; off unless the operator sets "
    "`API_RATE_BURST` and `API_RATE_PER_MINUTE`). Nothing was done: wait `Retry-After` "
    "seconds and send the same call again. Judged after the token (401) and its scopes and "
    "networks (403), before the body.",
    error_example(
        "Too many calls",
        "rate_limited",
        "Too many requests with this token. Expected available in 12 seconds.",
    ),
)


TOKEN_FORBIDDEN_DESCRIPTION = (
    "`forbidden`: the token may not make this call: the client's address is outside the "
    "token's allowed client networks, or the token lacks this operation's scope ({scope}). "
    "The message names the refused address or the missing scope. Judged right after the "
    "token (401), before the rate limit and the body; nothing is done."
)
OUTSIDE_NETWORKS = error_example(
    "Address outside the token's networks",
    "forbidden",
    "This token is not accepted from 198.51.100.7: the address is outside its allowed client "
    "networks.",
)


def missing_scope(scope: str, path: str, other: str) -> OpenApiExample:
    return error_example(
        f"Token without the {scope} scope",
        "forbidden",
        f"This token lacks the '{scope}' scope needed for {path} (its scopes: {other}).",
    )


# --- every token view ------------------------------------------------------------

token_api_schema = extend_schema(parameters=[AUTH_CHALLENGE, RETRY_AFTER])


# --- POST /api/v1/inbox ----------------------------------------------------------

INBOX_REQUEST_EXAMPLE = OpenApiExample(
    "A ticket from Jira",
    value={
        "assignerEmail": "assigner@example.com",
        "assigneeEmail": "assignee@example.com",
        "description": "Ship the quarterly report",
        "deadline": "2030-03-01T17:00:00Z",
        "externalSystem": "jira",
        "externalId": "OPS-42",
    },
    request_only=True,
)

INBOX_CREATED = OpenApiResponse(
    response=InboxCreatedSerializer,
    description="Created: the commitment waits in `Pending_Handshake` for its assignee.",
    examples=[
        OpenApiExample(
            "Created", value={"id": "6f1c2f0e-8a51-4c1e-9a8e-2b1d4f3c5a7b"}, response_only=True
        )
    ],
)

inbox_schema = extend_schema(
    operation_id="inbox_create",
    tags=["Inbound API"],
    summary="Create a commitment from an external system",
    description=(
        "Creates a commitment in `Pending_Handshake` for the assignee to accept, records an "
        "audit event attributed to the token, and requests the handshake notification, all "
        "in one transaction.\n\n"
        "Validation is all-or-nothing: strings are trimmed before their length limits apply; "
        "unknown fields are ignored. The `deadline` key is required (its value may be null) "
        "and must be an absolute ISO-8601 date and time with `Z` or a UTC offset.\n\n"
        "Checks run in this order, the first failure answering: token (401); the token's "
        "client networks and its `inbox` scope (403); the token's "
        "rate limit, when the operator set one (429); body and fields (400); "
        "`assignerEmail` is the token owner (403); `assigneeEmail` is an active "
        "user's verified address (400, `details.assigneeEmail`, the same answer for an unknown, "
        "an unverified and a deactivated address); the external reference is new for this "
        "assigner "
        "(409). Nothing is stored when any check fails."
    ),
    request=InboxSerializer,
    examples=[INBOX_REQUEST_EXAMPLE],
    responses={
        201: INBOX_CREATED,
        400: error_response(
            "`invalid_payload`: the body is not a JSON object sent as `application/json`, "
            "a field fails its rule, or `assigneeEmail` is no active user's verified address. "
            "`details` maps "
            "each failing field (as sent) to a message." + BAD_HOST_DESCRIPTION,
            error_example(
                "Field rules",
                "invalid_payload",
                "The request body failed validation.",
                description="Ensure this field has no more than 2000 characters.",
                deadline="Give an ISO-8601 date and time with a UTC offset, "
                "for example 2025-03-01T17:00:00Z or 2025-03-01T18:00:00+01:00.",
            ),
            error_example(
                "Unknown assignee",
                "invalid_payload",
                "The request body failed validation.",
                assigneeEmail=ASSIGNEE_UNKNOWN,
            ),
            INVALID_PAYLOAD_WRONG_TYPE,
            INVALID_PAYLOAD_NOT_OBJECT,
            BAD_HOST,
        ),
        401: UNAUTHORIZED,
        403: error_response(
            TOKEN_FORBIDDEN_DESCRIPTION.format(scope="`inbox`")
            + " Later, after the body: `forbidden` when `assignerEmail` is not the address of "
            "the token's owner. "
            "`https_required`: plain HTTP to a non-loopback host in production.",
            error_example(
                "Someone else's assigner",
                "forbidden",
                "assignerEmail must be the address of the token's owner.",
            ),
            OUTSIDE_NETWORKS,
            missing_scope("inbox", "/api/v1/inbox", "sync"),
            HTTPS_REQUIRED,
        ),
        409: error_response(
            "`duplicate_external_ref`: this assigner already has a commitment with this "
            "`externalSystem` and `externalId`. Nothing is inserted.",
            error_example(
                "Replayed ticket",
                "duplicate_external_ref",
                "A commitment with this externalSystem and externalId already exists for "
                "this assigner.",
            ),
        ),
        413: PAYLOAD_TOO_LARGE,
        429: RATE_LIMITED,
        500: INTERNAL_ERROR,
    },
)


# --- POST /api/v1/sync -----------------------------------------------------------

SYNCED = OpenApiResponse(
    response=SyncResultSerializer,
    description=(
        "The commitment now has the requested status: `changed` is true when this call moved "
        "it, false when it already had that status (a replay; nothing was written)."
    ),
    examples=[
        OpenApiExample(
            "Completed now",
            value={
                "id": "6f1c2f0e-8a51-4c1e-9a8e-2b1d4f3c5a7b",
                "status": "Completed",
                "previousStatus": "Active",
                "changed": True,
            },
            response_only=True,
        ),
        OpenApiExample(
            "Replay",
            value={
                "id": "6f1c2f0e-8a51-4c1e-9a8e-2b1d4f3c5a7b",
                "status": "Completed",
                "previousStatus": "Completed",
                "changed": False,
            },
            response_only=True,
        ),
    ],
)

sync_schema = extend_schema(
    operation_id="sync_status",
    tags=["Inbound API"],
    summary="Drive a status change from an external system",
    description=(
        "Moves the commitment with this external reference, among those whose assigner is "
        "the token owner, to `status` (only `Completed` today: `Active` to `Completed`, "
        "through the same transition as the user interface, with an audit event "
        "attributed to the token).\n\n"
        "Replaying into the status the commitment already has answers `200` with "
        "`changed: false` and writes nothing. A reference that is unknown, or belongs to "
        "another assigner, is `404 not_found`; a commitment that cannot move to the "
        "requested status (for example still `Pending_Handshake`) is "
        "`409 invalid_transition` with `details.currentStatus`.\n\n"
        "Checks run in this order, the first failure answering: token (401); the token's "
        "client networks and its `sync` scope (403); the token's rate limit, when the "
        "operator set one (429); body and fields (400); the reference (404); the move (409)."
    ),
    request=SyncSerializer,
    examples=[
        OpenApiExample(
            "Ticket closed",
            value={"externalSystem": "jira", "externalId": "OPS-42", "status": "Completed"},
            request_only=True,
        ),
    ],
    responses={
        200: SYNCED,
        400: error_response(
            "`invalid_payload`: the body is not a JSON object sent as `application/json`, "
            "or a field fails its rule (including a `status` other than `Completed`)."
            + BAD_HOST_DESCRIPTION,
            error_example(
                "Unsupported status",
                "invalid_payload",
                "The request body failed validation.",
                status='"Active" is not a valid choice.',
            ),
            INVALID_PAYLOAD_WRONG_TYPE,
            INVALID_PAYLOAD_NOT_OBJECT,
            BAD_HOST,
        ),
        401: UNAUTHORIZED,
        403: error_response(
            TOKEN_FORBIDDEN_DESCRIPTION.format(scope="`sync`")
            + " `https_required`: plain HTTP to a non-loopback host in production.",
            OUTSIDE_NETWORKS,
            missing_scope("sync", "/api/v1/sync", "inbox"),
            HTTPS_REQUIRED,
        ),
        404: error_response(
            "`not_found`: no commitment of the token owner (as assigner) carries this "
            "external reference.",
            error_example("Unknown reference", "not_found", "No such commitment."),
        ),
        409: error_response(
            "`invalid_transition`: the commitment's status cannot move to the requested one; "
            "`details.currentStatus` says where it is.",
            error_example(
                "Not yet accepted",
                "invalid_transition",
                "Cannot complete a commitment whose status is Pending_Handshake.",
                currentStatus="Pending_Handshake",
            ),
        ),
        413: PAYLOAD_TOO_LARGE,
        429: RATE_LIMITED,
        500: INTERNAL_ERROR,
        503: error_response(
            "`busy`: the commitment was changing too often at once (the move lost to other "
            "writes on it every time it was made); nothing was written. Retry after "
            "`Retry-After` seconds: the same call will likely pass then.",
            error_example(
                "Changing too often",
                "busy",
                "It is changing too often at once; try again in a moment.",
            ),
        ),
    },
)


# --- GET /api/v1/commitments/{id} and GET /api/v1/commitments ---------------------

READ_TAG = "Read API"
EXAMPLE_ID = "6f1c2f0e-8a51-4c1e-9a8e-2b1d4f3c5a7b"
EXAMPLE_COMMITMENT = {
    "id": EXAMPLE_ID,
    "status": "Active",
    "description": "Ship the quarterly report",
    "deadline": "2030-03-01T17:00:00Z",
    "externalSystem": "jira",
    "externalId": "OPS-42",
    "assignerEmail": "assigner@example.com",
    "assigneeEmail": "assignee@example.com",
    "createdAt": "2030-02-20T09:15:02.118000Z",
    "updatedAt": "2030-02-20T10:03:44.530000Z",
    "link": "https://example.atlassian.net/browse/OPS-42",
}
EXAMPLE_HISTORY = [
    {
        "status": "Pending_Handshake",
        "previousStatus": None,
        "at": "2030-02-20T09:15:02.120000Z",
        "actorKind": "api_token",
    },
    {
        "status": "Active",
        "previousStatus": "Pending_Handshake",
        "at": "2030-02-20T10:03:44.531000Z",
        "actorKind": "user",
    },
]

ETAG = OpenApiParameter(
    "ETag",
    type={"type": "string", "example": '"3f1a9c0d5e7b2a4c6d8e0f1a2b3c4d5e"'},
    location=OpenApiParameter.HEADER,
    required=True,
    description="The answer's version: send it back as `If-None-Match` to be told `304` while "
    "it is unchanged.",
    response=[200, 304],
)
IF_NONE_MATCH = OpenApiParameter(
    "If-None-Match",
    type=str,
    location=OpenApiParameter.HEADER,
    required=False,
    description="An `ETag` this route gave (or `*`): when the answer would be the same, it is "
    "`304 Not Modified` with no body.",
)
NOT_MODIFIED = OpenApiResponse(
    description="Not modified: the answer is the one whose `ETag` was sent in `If-None-Match`. "
    "No body."
)
READ_RATE_LIMITED = error_response(
    "`rate_limited`: this token has spent its read calls for now (the per-token limit of "
    "`API_RATE_BURST` and `API_RATE_PER_MINUTE`, off unless the operator sets them; the reads "
    "have a bucket of their own, apart from the inbox's and sync's). Wait `Retry-After` "
    "seconds and ask again.",
    error_example(
        "Too many calls",
        "rate_limited",
        "Too many requests with this token. Expected available in 12 seconds.",
    ),
)
READ_FORBIDDEN = error_response(
    TOKEN_FORBIDDEN_DESCRIPTION.format(scope="`read`")
    + " `https_required`: plain HTTP to a non-loopback host in production.",
    OUTSIDE_NETWORKS,
    missing_scope("read", "/api/v1/commitments", "inbox, sync"),
    HTTPS_REQUIRED,
)
READ_ORDER = (
    "Checks run in this order, the first failure answering: token (401); the token's client "
    "networks and its `read` scope (403); the token's rate limit, when the operator set one "
    "(429); "
)

commitment_retrieve_schema = extend_schema(
    operation_id="commitments_retrieve",
    tags=[READ_TAG],
    summary="Read one commitment",
    description=(
        "One commitment the token's owner asked (assigner) or was asked (assignee), with its "
        "`history`: each status change, oldest first, from its creation, with when and what "
        "kind of actor made it (the facts its timeline shows; a renegotiation that leaves the "
        "status as it was is not a status change). A draft is its assigner's only. Take the "
        "`id` from the inbox's answer or from the list.\n\n"
        "Anyone else's commitment, and an unknown or malformed id, is `404 not_found`: the "
        "answer does not tell them apart.\n\n"
        "The answer carries an `ETag`; sent back as `If-None-Match`, it is answered `304` "
        "with no body while the commitment reads the same.\n\n" + READ_ORDER + "the id (404)."
    ),
    parameters=[
        OpenApiParameter(
            "id",
            OpenApiTypes.UUID,
            OpenApiParameter.PATH,
            description="The commitment's id.",
        ),
        IF_NONE_MATCH,
        ETAG,
    ],
    responses={
        200: OpenApiResponse(
            response=CommitmentDetailSerializer,
            description="The commitment, with its history.",
            examples=[
                OpenApiExample(
                    "Accepted",
                    value={**EXAMPLE_COMMITMENT, "history": EXAMPLE_HISTORY},
                    response_only=True,
                )
            ],
        ),
        304: NOT_MODIFIED,
        400: error_response(
            BAD_HOST_DESCRIPTION.strip(),
            BAD_HOST,
        ),
        401: UNAUTHORIZED,
        403: READ_FORBIDDEN,
        404: error_response(
            "`not_found`: no commitment of the token owner (as assigner or assignee) has this "
            "id, whether it is unknown or someone else's.",
            error_example("Unknown id", "not_found", "No such commitment."),
        ),
        429: READ_RATE_LIMITED,
        500: INTERNAL_ERROR,
    },
)

commitment_list_schema = extend_schema(
    operation_id="commitments_list",
    tags=[READ_TAG],
    summary="List commitments",
    description=(
        "The commitments the token's owner asked (assigner) or was asked (assignee; drafts "
        "are their assigner's only), newest change (`updatedAt`) first, in pages: "
        '`{"results": [...], "next": <URL>}`. Follow `next` as given until it is null; '
        "it keeps the filters and the `limit`. A commitment that changes while you page "
        "moves to the front, so a later pass with `updatedSince` finds it.\n\n"
        "Filters, all optional and combined: `role`, `status`, `externalSystem`, `externalId` "
        "(both: the commitments of one external reference), `updatedSince` (at or after, "
        "inclusive). `limit`: 1.."
        f"{LIMIT_MAX}, 50 by default. Unknown parameters are ignored; a bad value is "
        "`400 invalid_payload` with `details` naming each parameter.\n\n"
        "The answer carries an `ETag`; sent back as `If-None-Match`, it is answered `304` "
        "with no body while the page reads the same.\n\n" + READ_ORDER + "the parameters (400)."
    ),
    parameters=[CommitmentListQuerySerializer, IF_NONE_MATCH, ETAG],
    responses={
        200: OpenApiResponse(
            response=CommitmentPageSerializer,
            description="A page of commitments.",
            examples=[
                OpenApiExample(
                    "A page with more after it",
                    value={
                        "results": [EXAMPLE_COMMITMENT],
                        "next": "https://commitments.example.com/api/v1/commitments?limit=1"
                        "&cursor=1897638224530000.6f1c2f0e8a514c1e9a8e2b1d4f3c5a7b",
                    },
                    response_only=True,
                ),
                OpenApiExample(
                    "The last page", value={"results": [], "next": None}, response_only=True
                ),
            ],
        ),
        304: NOT_MODIFIED,
        400: error_response(
            "`invalid_payload`: a query parameter has a bad value; `details` maps each such "
            "parameter to a message." + BAD_HOST_DESCRIPTION,
            error_example(
                "Bad filters",
                "invalid_payload",
                "The query failed validation.",
                status='"Done" is not a valid choice.',
                limit="Ensure this value is less than or equal to 100.",
            ),
            BAD_HOST,
        ),
        401: UNAUTHORIZED,
        403: READ_FORBIDDEN,
        429: READ_RATE_LIMITED,
        500: INTERNAL_ERROR,
    },
)
