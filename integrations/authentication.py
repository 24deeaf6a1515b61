"""Bearer-token authentication for the public API (DRF).

One query finds the token and its owner (by digest, through the unique index),
its text compiled by Django once (lib.db.Prepared).
Anything wrong with the credentials (missing, malformed, unknown, revoked,
expired, or an owner who can no longer sign in) is `401 unauthorized` with
`WWW-Authenticate: Bearer`, through the one exception handler. The first refused
use of an expired token writes one `api_token_expired` audit row (a conditional
UPDATE marks it recorded); an accepted token costs nothing more, since expiry is
read from the row already loaded.

Authentication only identifies the token. Whether it may make this call, its
scopes and its client networks, is the permission `TokenMayCall`, judged next:
`403 forbidden` naming the refused address or the missing scope (the network
first, so a caller from outside learns nothing about the token's scopes). Both
are read from the row already loaded: a token with no networks never asks for
the client's address, and an allowed call costs no query more.

`last_used_at` records allowed uses: written (by the view, through
`record_use`) once the token is identified *and* allowed, at most once a
minute per token. A call refused for the token itself (401, or 403 for its
networks or scopes) leaves it as it was, so the owner's "last used" never
shows a call the token could not make; a call refused later (its body, its
assigner) was made with the token and counts. When the row just loaded says
the last recorded use is a minute old or more (or there is none), a
conditional UPDATE writes it. Requests in between write nothing, and of racing
requests at the minute boundary (each having loaded the same stale row) only
one UPDATE matches the row. The same ORM path runs on every database: the
first use of a token in a minute costs one statement more than the uses after
it.
"""

from __future__ import annotations

import datetime as dt

from django.db.models import Q
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from integrations import services, tokens
from integrations.models import ApiToken
from lib.client_address import address_in_networks, client_ip
from lib.db import Prepared

KEYWORD = "Bearer"
LAST_USED_RESOLUTION = dt.timedelta(minutes=1)
INVALID_TOKEN = "The bearer token is not valid (unknown, revoked or expired)."

# The token with its owner, by the digest's unique index: compiled once
# (lib.db.Prepared), the statement of every call to the token API.
_token_by_digest = Prepared(
    lambda digest: ApiToken.objects.select_related("user").filter(digest=digest).order_by()[:1]
)


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
        found = _token_by_digest(tokens.digest(plaintext))
        if not found:
            raise exceptions.AuthenticationFailed(INVALID_TOKEN)
        token = found[0]
        assert isinstance(token, ApiToken)  # the read's model
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
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return KEYWORD


class TokenMayCall(BasePermission):
    """The token's client networks, then its scopes: `403 forbidden`, the message
    naming the refused address or the missing scope. The view names the scope
    it needs (`required_scope`)."""

    def has_permission(self, request: Request, view) -> bool:
        token = request.auth
        if not isinstance(token, ApiToken):
            return False  # no token: IsAuthenticated, before this, answered 401
        if token.networks:
            address = client_ip(request)
            if address is None:
                raise exceptions.PermissionDenied(
                    "This token is limited to certain client networks, and the client's "
                    "address could not be determined."
                )
            if not address_in_networks(address, token.networks):
                raise exceptions.PermissionDenied(
                    f"This token is not accepted from {address}: the address is outside "
                    "its allowed client networks."
                )
        scope = view.required_scope
        if scope not in token.scopes:
            has = ", ".join(token.scopes) or "none"
            raise exceptions.PermissionDenied(
                f"This token lacks the '{scope}' scope needed for {request.path} "
                f"(its scopes: {has})."
            )
        return True


def record_use(token: ApiToken) -> None:
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
