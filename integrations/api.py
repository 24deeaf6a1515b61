"""The public API: one view per operation, each thin (parse with an input
serializer, call a `commitments` service, render with an output serializer).
Errors are raised, not rendered: `config.api_errors` answers them, the
services' domain errors included. The OpenAPI texts are in
`integrations.api_docs`.

Order of checks, first failure wins: docs/api.md, "Order of checks" (the
reasons too; the operations' OpenAPI descriptions say it to integrators).
"""

from __future__ import annotations

from typing import Any, NoReturn

from django.conf import settings
from rest_framework import permissions, status
from rest_framework.exceptions import PermissionDenied, Throttled, ValidationError
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from audit.services import Actor
from commitments import services
from integrations import selectors
from integrations.api_docs import ASSIGNEE_UNKNOWN, inbox_schema, sync_schema, token_api_schema
from integrations.authentication import BearerTokenAuthentication, TokenMayCall, record_use
from integrations.models import ApiToken
from integrations.serializers import (
    InboxCreatedSerializer,
    InboxSerializer,
    SyncResultSerializer,
    SyncSerializer,
)
from lib.json_api import JsonOnlyNegotiation, validated_body
from ratelimits.buckets import take


class TokenRateThrottle(BaseThrottle):
    """API_RATE_BURST calls at once per token, refilled at API_RATE_PER_MINUTE;
    off (no query, no Redis command) while API_RATE_BURST is 0."""

    retry_after = 0

    def allow_request(self, request: Request, view: APIView) -> bool:
        if not settings.API_RATE_BURST:
            return True
        allowed, self.retry_after = take(
            f"api-token:{request.auth.pk}",
            burst=settings.API_RATE_BURST,
            per_second=settings.API_RATE_PER_MINUTE / 60,
        )
        return allowed

    def wait(self) -> int:
        return self.retry_after


@token_api_schema
class TokenApiView(APIView):
    authentication_classes = [BearerTokenAuthentication]
    permission_classes = [permissions.IsAuthenticated, TokenMayCall]
    throttle_classes = [TokenRateThrottle]
    required_scope: str  # each operation's own (integrations.models.SCOPES)
    parser_classes = [JSONParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonOnlyNegotiation

    def check_permissions(self, request: Request) -> None:
        super().check_permissions(request)  # 401, then 403 (networks, scopes)
        token = request.auth
        assert isinstance(token, ApiToken)  # BearerTokenAuthentication's, allowed
        record_use(token)  # an allowed call: DRF judges the rate limit next

    def throttled(self, request: Request, wait: float | None) -> NoReturn:
        # Answered by config.api_errors: 429 rate_limited, Retry-After in seconds.
        raise Throttled(wait, detail="Too many requests with this token.")

    def actor(self, request: Request) -> Actor:
        token = request.auth
        assert isinstance(token, ApiToken)  # BearerTokenAuthentication's
        return Actor.for_token(
            user=request.user, token_id=token.id, token_prefix=token.prefix, token_name=token.name
        )

    def validated(self, request: Request, serializer_class: type[Serializer]) -> dict[str, Any]:
        return validated_body(request, serializer_class)


class InboxView(TokenApiView):
    required_scope = "inbox"

    @inbox_schema
    def post(self, request: Request) -> Response:
        data = self.validated(request, InboxSerializer)
        owner = request.user
        users = selectors.users_by_email(emails=[data["assignerEmail"], data["assigneeEmail"]])
        assigner = users.get(data["assignerEmail"])
        if assigner is None or assigner.pk != owner.pk:
            raise PermissionDenied("assignerEmail must be the address of the token's owner.")
        assignee = users.get(data["assigneeEmail"])
        if assignee is None or not assignee.can_receive:
            raise ValidationError({"assigneeEmail": ASSIGNEE_UNKNOWN})
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


class SyncView(TokenApiView):
    required_scope = "sync"

    @sync_schema
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
