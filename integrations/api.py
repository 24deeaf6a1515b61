"""The public API: one view per operation, each thin (parse with an input
serializer, call a `commitments` service, render with an output serializer).
Errors are raised, not rendered: `config.api_errors` answers them, the
services' domain errors included. The OpenAPI texts are in
`integrations.api_docs`.

Order of checks, first failure wins: docs/api.md, "Order of checks" (the
reasons too; the operations' OpenAPI descriptions say it to integrators).
"""

from __future__ import annotations

import hashlib
import uuid
from typing import TYPE_CHECKING, Any, NoReturn

from django.conf import settings
from django.http import HttpResponse, HttpResponseNotModified
from django.utils.http import parse_etags, quote_etag
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
from commitments import selectors as commitment_selectors
from commitments import services
from integrations import selectors
from integrations.api_docs import (
    ASSIGNEE_UNKNOWN,
    commitment_list_schema,
    commitment_retrieve_schema,
    inbox_schema,
    sync_schema,
    token_api_schema,
)
from integrations.authentication import BearerTokenAuthentication, TokenMayCall, record_use
from integrations.models import ApiToken
from integrations.serializers import (
    CommitmentListQuerySerializer,
    InboxSerializer,
    SyncSerializer,
    commitment_body,
    cursor_for,
    history_body,
    inbox_created_body,
    sync_result_body,
)
from lib.api_errors import ApiError, flatten_errors
from lib.json_api import JsonOnlyNegotiation, validated_body
from ratelimits.buckets import take

if TYPE_CHECKING:
    from accounts.models import User


class TokenRateThrottle(BaseThrottle):
    """API_RATE_BURST calls at once per token, refilled at API_RATE_PER_MINUTE;
    off (no query, no Redis command) while API_RATE_BURST is 0. The writes
    (inbox, sync) share one bucket per token; the reads have another of the
    same size (`rate_bucket`), so polling never spends the calls a token's
    writes need (docs/api.md, "Rate limit of the token API")."""

    retry_after = 0

    def allow_request(self, request: Request, view: APIView) -> bool:
        if not settings.API_RATE_BURST:
            return True
        bucket = getattr(view, "rate_bucket", "api-token")
        allowed, self.retry_after = take(
            f"{bucket}:{request.auth.pk}",
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

    def owner(self, request: Request) -> User:
        """The token's owner (authentication put the token on the request)."""
        token = request.auth
        assert isinstance(token, ApiToken)  # BearerTokenAuthentication's
        return token.user

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
        return Response(inbox_created_body(commitment.pk), status=status.HTTP_201_CREATED)


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
        body = sync_result_body(
            commitment_id=result.commitment.pk,
            status=result.commitment.status,
            previous_status=result.previous_status,
            changed=result.changed,
        )
        return Response(body, status=status.HTTP_200_OK)


# --- reads: GET /api/v1/commitments and /api/v1/commitments/{id} -------------------

NOT_FOUND = "No such commitment."


def conditional_json(request: Request, body: Any) -> HttpResponse:
    """`body` as JSON with a strong ETag (a digest of the bytes, so it changes
    exactly when the answer does); `304` with no body when `If-None-Match`
    names it (weak comparison, RFC 9110 13.1.2) or is `*`."""
    content = JSONRenderer().render(body)
    etag = quote_etag(hashlib.sha256(content).hexdigest()[:32])
    presented = request.headers.get("If-None-Match")
    if presented:
        wanted = {tag.removeprefix("W/") for tag in parse_etags(presented)}
        if "*" in wanted or etag in wanted:
            not_modified = HttpResponseNotModified()  # no body, no Content-Type
            not_modified["ETag"] = etag
            return not_modified
    response = HttpResponse(content, content_type="application/json")
    response["ETag"] = etag
    return response


class CommitmentReadView(TokenApiView):
    required_scope = "read"
    # Reads take from a bucket of their own (TokenRateThrottle).
    rate_bucket = "api-token-read"


class CommitmentDetailView(CommitmentReadView):
    @commitment_retrieve_schema
    def get(self, request: Request, id: str) -> HttpResponse:
        try:
            pk = uuid.UUID(id)
        except ValueError:
            raise ApiError(NOT_FOUND, error="not_found", status_code=404) from None
        commitment = commitment_selectors.commitment_read(
            user=self.owner(request), commitment_id=pk
        )
        if commitment is None:  # unknown, or someone else's: the same answer
            raise ApiError(NOT_FOUND, error="not_found", status_code=404)
        body = commitment_body(commitment)
        body["history"] = history_body(commitment.history or [])
        return conditional_json(request, body)


class CommitmentListView(CommitmentReadView):
    @commitment_list_schema
    def get(self, request: Request) -> HttpResponse:
        # A plain dict, not the QueryDict: an empty `status=` is a bad value
        # here, not an absent one (DRF reads form input that way).
        query = CommitmentListQuerySerializer(data=request.query_params.dict())
        if not query.is_valid():
            raise ApiError(
                "The query failed validation.",
                error="invalid_payload",
                status_code=400,
                details=flatten_errors(query.errors),
            )
        data = query.validated_data
        owner = self.owner(request)
        page = commitment_selectors.commitment_page_for(
            user=owner,
            limit=data["limit"],
            role=data.get("role"),
            status=data.get("status"),
            external_system=data.get("externalSystem"),
            external_id=data.get("externalId"),
            updated_since=data.get("updatedSince"),
            after=data.get("cursor"),
        )
        next_url = None
        if page.more:
            last = page.rows[-1]
            params = request.query_params.copy()
            params["cursor"] = cursor_for(last.updated_at, last.pk)
            next_url = request.build_absolute_uri(f"{request.path}?{params.urlencode()}")
        body = {
            "results": [commitment_body(row) for row in page.rows],
            "next": next_url,
        }
        return conditional_json(request, body)
