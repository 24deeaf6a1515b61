"""The bare floor's one view: an authenticated DRF call and nothing more.

The token is checked as the service checks it
(integrations.authentication.BearerTokenAuthentication: the scheme, the
token's shape and checksum, one SELECT of the token with its user by the
digest's unique index, the constant-time comparison, revoked, inactive or
expired refused), with the service's own token functions
(integrations.tokens, plain Python), and the view answers the small JSON body
the in-stack floor answers (benchmarks/views.py).
"""

from __future__ import annotations

from django.utils import timezone
from rest_framework import exceptions, permissions
from rest_framework.authentication import BaseAuthentication
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from benchmarks.bare.models import ApiToken
from integrations import tokens

INVALID_TOKEN = "The bearer token is not valid (unknown, revoked or expired)."


class BearerToken(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[object, ApiToken] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "bearer":
            raise exceptions.AuthenticationFailed("Use the Bearer scheme.")
        credentials = credentials.strip()
        if not tokens.has_valid_shape(credentials):
            raise exceptions.AuthenticationFailed("Malformed bearer token.")
        try:
            token = ApiToken.objects.select_related("user").get(digest=tokens.digest(credentials))
        except ApiToken.DoesNotExist:
            raise exceptions.AuthenticationFailed(INVALID_TOKEN) from None
        if not tokens.matches(credentials, token.digest):
            raise exceptions.AuthenticationFailed(INVALID_TOKEN)
        expired = token.expires_at is not None and token.expires_at <= timezone.now()
        if token.revoked_at is not None or not token.user.is_active or expired:
            raise exceptions.AuthenticationFailed(INVALID_TOKEN)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"


class FloorView(APIView):
    authentication_classes = [BearerToken]
    permission_classes = [permissions.IsAuthenticated]
    renderer_classes = [JSONRenderer]

    def post(self, request: Request) -> Response:
        return Response({"user": str(request.user.pk)})
