"""Bearer-token authentication for the public API (DRF).

One query finds the token and its owner (by digest, through the unique index).
Anything wrong with the credentials (missing, malformed, unknown, revoked,
expired, or an owner who can no longer sign in) is `401 unauthorized` with
`WWW-Authenticate: Bearer`, through the one exception handler. The first refused
use of an expired token writes one `api_token_expired` audit row (a conditional
UPDATE marks it recorded); an accepted token costs nothing more, since expiry is
read from the row already loaded.

`last_used_at` is written at most once a minute per token, and only for a token
that was accepted: when the row just loaded says the last recorded use is a
minute old or more (or there is none), a conditional UPDATE writes it. Requests
in between write nothing, and of racing requests at the minute boundary (each
having loaded the same stale row) only one UPDATE matches the row. The same
ORM path runs on every database: the first use of a token in a minute costs one
statement more than the uses after it.
"""

from __future__ import annotations

import datetime as dt

from django.db.models import Q
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from integrations import services, tokens
from integrations.models import ApiToken

KEYWORD = "Bearer"
LAST_USED_RESOLUTION = dt.timedelta(minutes=1)
INVALID_TOKEN = "The bearer token is not valid (unknown, revoked or expired)."


class BearerTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[object, ApiToken] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None  # the permission check answers 401 "not provided"
        scheme, _, credentials = header.partition(" ")
        # The scheme name is case-insensitive (RFC 9110, section 11.1).
        if scheme.lower() != KEYWORD.lower():
            raise exceptions.AuthenticationFailed(
                "Use the Bearer scheme: Authorization: Bearer <API token>."
            )
        credentials = credentials.strip()
        if not tokens.has_valid_shape(credentials):
            # Wrong length, alphabet or checksum: no lookup needed to know.
            raise exceptions.AuthenticationFailed("Malformed bearer token.")
        return self._authenticate_token(credentials)

    def _authenticate_token(self, plaintext: str) -> tuple[object, ApiToken]:
        try:
            token = ApiToken.objects.select_related("user").get(digest=tokens.digest(plaintext))
        except ApiToken.DoesNotExist:
            raise exceptions.AuthenticationFailed(INVALID_TOKEN) from None
        # The row was found by equality on the digest; compare again in constant
        # time so the decision itself never depends on where two strings differ.
        if not tokens.matches(plaintext, token.digest):
            raise exceptions.AuthenticationFailed(INVALID_TOKEN)
        if token.revoked_at is not None or not token.user.is_active:
            raise exceptions.AuthenticationFailed(INVALID_TOKEN)
        if token.is_expired():
            if token.expiry_recorded_at is None:
                services.api_token_record_expiry(token=token)
            raise exceptions.AuthenticationFailed(INVALID_TOKEN)
        _record_use(token)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return KEYWORD


def _record_use(token: ApiToken) -> None:
    """Write last_used_at, at most once per LAST_USED_RESOLUTION per token."""
    now = timezone.now()
    stale_before = now - LAST_USED_RESOLUTION
    if token.last_used_at is not None and token.last_used_at > stale_before:
        return  # recorded within the minute: no statement at all
    # Conditional, so that of requests racing at the boundary only one matches;
    # and never for a token revoked since it was loaded.
    ApiToken.objects.filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lte=stale_before),
        pk=token.pk,
        revoked_at__isnull=True,
    ).update(last_used_at=now)
    token.last_used_at = now
