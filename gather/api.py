"""POST /api/gather: draft commitments from pasted text, with the caller's own
model key. Thin: parse, check, call `gather.extraction.extract`, render (the
drafts were checked where the provider's answer was parsed). It writes no
commitment (saving drafts is the capture page's separate step). The OpenAPI
texts are in `gather.api_docs`.

Order of checks, first failure wins: docs/api.md, "Order of checks" (the
reasons too; also in the operation's OpenAPI description). A model that
declines is no failure: 200 with `drafts: []` and its words in `refusal`.

Neither the key nor the text is ever logged.
"""

from __future__ import annotations

import math
import time
from typing import Any

from django.conf import settings
from django.urls import reverse
from rest_framework import permissions
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.requests import AuthenticatedApiRequest
from accounts.timezones import user_now
from gather import extraction
from gather import selectors as gather_selectors
from gather.api_docs import gather_schema
from gather.serializers import GatherResultSerializer, GatherSerializer
from lib.api_errors import ApiError
from lib.json_api import JsonOnlyNegotiation, validated_body
from ratelimits.buckets import take

BEARER_REFUSED = (
    "POST /api/gather takes the session cookie of a signed-in user only; bearer tokens are "
    "not accepted here. Programmatic clients use POST /api/v1/inbox."
)


def clock() -> float:
    """The rate limit's clock: the one seam tests move."""
    return time.time()


def model_keys_path() -> str:
    return reverse("model_keys")


def model_keys_url() -> str:
    return f"{settings.SITE_URL}{model_keys_path()}"


def minutes(seconds: int) -> str:
    count = max(1, math.ceil(seconds / 60))
    return f"{count} minute" if count == 1 else f"{count} minutes"


class GatherView(APIView):
    authentication_classes = [SessionAuthentication]
    # The 401's challenge: a signed-in session (cookie), not a bearer token.
    www_authenticate = 'Cookie realm="session"'
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonOnlyNegotiation

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # Before the session: a token is refused even alongside a session cookie,
        # so no script can come to rely on it.
        if request.META.get("HTTP_AUTHORIZATION"):
            raise AuthenticationFailed(BEARER_REFUSED)
        super().initial(request, *args, **kwargs)

    @gather_schema
    def post(self, request: AuthenticatedApiRequest) -> Response:
        user = request.user
        text = validated_body(request, GatherSerializer)["text"]
        key = gather_selectors.model_key_for_gather(user=user)
        if key is None:
            raise ApiError(
                "You have no model provider key: add an OpenAI or Anthropic key on the "
                f"Model keys page ({model_keys_url()}), then try again.",
                error="no_byok_key",
                status_code=400,
            )
        allowed, retry_after = take(
            f"gather:{user.pk}",
            burst=settings.GATHER_RATE_BURST,
            per_second=settings.GATHER_RATE_PER_HOUR / 3600,
            now=clock(),
        )
        if not allowed:
            raise RateLimited(retry_after)
        try:
            result = extraction.extract(
                provider=key.provider,
                api_key=key.key,
                model=key.model,
                text=text,
                now=user_now(user),
                collaborators=gather_selectors.collaborators_for(user=user),
            )
        except extraction.UpstreamFailure as exc:
            raise upstream_failure(str(exc)) from None
        return Response(GatherResultSerializer(result).data, status=200)


def upstream_failure(message: str) -> ApiError:
    return ApiError(
        message or "The model provider failed.", error="upstream_failure", status_code=502
    )


class RateLimited(ApiError):
    def __init__(self, retry_after: int) -> None:
        super().__init__(
            f"Too many gather calls: try again in {minutes(retry_after)}.",
            error="rate_limited",
            status_code=429,
            headers={"Retry-After": str(retry_after)},
        )
        self.retry_after = retry_after
