"""The public API: one view per operation, each thin (parse with an input
serializer, call a `commitments` service, render with an output serializer).

Order of checks on every operation, first failure wins:

1. (middleware) plain HTTP off loopback in production: 403 https_required;
   body over 1 MiB: 413 payload_too_large.
2. bearer token: 401 unauthorized.
3. body: not `application/json`, not JSON, not an object, or any field failing
   its rule: 400 invalid_payload, all field errors at once in `details`.
4. inbox: assignerEmail not the token owner: 403 forbidden; then assigneeEmail
   not a user: 400 invalid_payload (`details.assigneeEmail`). Both addresses
   are resolved in one query; the assignee is judged only once the caller has
   shown it may act as the assigner.
5. inbox: the database's unique constraint refuses the external reference:
   409 duplicate_external_ref. Sync: unknown reference among the owner's own
   commitments: 404 not_found; impossible move: 409 invalid_transition.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import permissions, status
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from audit.services import Actor
from commitments import services
from config.api_errors import ApiError
from integrations import selectors
from integrations.api_docs import (
    AUTH_CHALLENGE,
    BAD_HOST,
    BAD_HOST_DESCRIPTION,
    HTTPS_REQUIRED,
    INTERNAL_ERROR,
    INVALID_PAYLOAD_NOT_OBJECT,
    INVALID_PAYLOAD_WRONG_TYPE,
    PAYLOAD_TOO_LARGE,
    UNAUTHORIZED,
    error_example,
    error_response,
)
from integrations.authentication import BearerTokenAuthentication
from integrations.serializers import (
    InboxCreatedSerializer,
    InboxSerializer,
    SyncResultSerializer,
    SyncSerializer,
)

JSON = "application/json"


class JsonOnlyNegotiation(DefaultContentNegotiation):
    """Always answer JSON, whatever the Accept header asks for (never 406)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def invalid_payload(message: str, **details: str) -> ApiError:
    return ApiError(message, error="invalid_payload", status_code=400, details=details)


@extend_schema(parameters=[AUTH_CHALLENGE])
class TokenApiView(APIView):
    authentication_classes = [BearerTokenAuthentication]
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonOnlyNegotiation

    def actor(self, request: Request) -> Actor:
        token = request.auth
        return Actor.for_token(user=request.user, token_id=token.id, token_prefix=token.prefix)

    def validated(self, request: Request, serializer_class: type[Serializer]) -> dict[str, Any]:
        """The body as a JSON object, validated all-or-nothing by `serializer_class`."""
        media_type = request.content_type.split(";", 1)[0].strip().lower()
        if media_type != JSON:
            shown = media_type or "none"
            raise invalid_payload(
                "The request body must be JSON (Content-Type: application/json).",
                body=f"Unsupported content type '{shown}'.",
            )
        try:
            data = request.data
        except RecursionError:  # absurdly deep nesting; json gives up before we do
            raise invalid_payload(
                "The request body is not valid JSON.", body="Nested too deeply."
            ) from None
        if not isinstance(data, dict):
            raise invalid_payload(
                "The request body must be a JSON object.", body="Expected a JSON object."
            )
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


# --- POST /api/v1/inbox ----------------------------------------------------------

INBOX_REQUEST_EXAMPLE = OpenApiExample(
    "A ticket from Jira",
    value={
        "assignerEmail": "lead@example.com",
        "assigneeEmail": "knight@example.com",
        "description": "Ship the quarterly report",
        "deadline": "2025-03-01T17:00:00Z",
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


class InboxView(TokenApiView):
    @extend_schema(
        operation_id="inbox_create",
        tags=["Webhooks"],
        summary="Create a commitment from an external system",
        description=(
            "Creates a commitment in `Pending_Handshake` for the assignee to accept, records an "
            "audit event attributed to the token, and requests the handshake notification, all "
            "in one transaction.\n\n"
            "Validation is all-or-nothing: strings are trimmed before their length limits apply; "
            "unknown fields are ignored. The `deadline` key is required (its value may be null) "
            "and must be an absolute ISO-8601 date and time with `Z` or a UTC offset.\n\n"
            "Checks run in this order, the first failure answering: token (401); body and "
            "fields (400); `assignerEmail` is the token owner (403); `assigneeEmail` is a user "
            "(400, `details.assigneeEmail`); the external reference is new for this assigner "
            "(409). Nothing is stored when any check fails."
        ),
        request=InboxSerializer,
        examples=[INBOX_REQUEST_EXAMPLE],
        responses={
            201: INBOX_CREATED,
            400: error_response(
                "`invalid_payload`: the body is not a JSON object sent as `application/json`, "
                "a field fails its rule, or `assigneeEmail` is no user's address. `details` maps "
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
                    assigneeEmail="No user has this e-mail address.",
                ),
                INVALID_PAYLOAD_WRONG_TYPE,
                INVALID_PAYLOAD_NOT_OBJECT,
                BAD_HOST,
            ),
            401: UNAUTHORIZED,
            403: error_response(
                "`forbidden`: `assignerEmail` is not the address of the token's owner. "
                "`https_required`: plain HTTP to a non-loopback host in production.",
                error_example(
                    "Someone else's assigner",
                    "forbidden",
                    "assignerEmail must be the address of the token's owner.",
                ),
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
            500: INTERNAL_ERROR,
        },
    )
    def post(self, request: Request) -> Response:
        data = self.validated(request, InboxSerializer)
        owner = request.user
        users = selectors.users_by_email(emails=[data["assignerEmail"], data["assigneeEmail"]])
        assigner = users.get(data["assignerEmail"])
        if assigner is None or assigner.pk != owner.pk:
            raise PermissionDenied("assignerEmail must be the address of the token's owner.")
        assignee = users.get(data["assigneeEmail"])
        if assignee is None:
            raise ValidationError({"assigneeEmail": "No user has this e-mail address."})
        commitment = services.commitment_create_pending(
            actor=self.actor(request),
            assigner=owner,
            assignee=assignee,
            description=data["description"],
            deadline=data["deadline"],
            external_system=data["externalSystem"],
            external_id=data["externalId"],
        )
        body = InboxCreatedSerializer({"id": commitment.pk}).data
        return Response(body, status=status.HTTP_201_CREATED)


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


class SyncView(TokenApiView):
    @extend_schema(
        operation_id="sync_status",
        tags=["Webhooks"],
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
            "`409 invalid_transition` with `details.currentStatus`."
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
                "`https_required`: plain HTTP to a non-loopback host in production.",
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
            500: INTERNAL_ERROR,
        },
    )
    def post(self, request: Request) -> Response:
        data = self.validated(request, SyncSerializer)
        result = services.commitment_complete(
            actor=self.actor(request),
            external_system=data["externalSystem"],
            external_id=data["externalId"],
            replay_is_noop=True,
        )
        body = SyncResultSerializer(
            {
                "id": result.commitment.pk,
                "status": result.commitment.status,
                "previousStatus": result.previous_status,
                "changed": result.changed,
            }
        ).data
        return Response(body, status=status.HTTP_200_OK)
