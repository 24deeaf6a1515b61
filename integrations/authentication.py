"""Bearer-token authentication for the public API (DRF).

One query finds the token and its owner (by digest, through the unique index).
Anything wrong with the credentials (missing, malformed, unknown, revoked, or an
owner who can no longer sign in) is `401 unauthorized` with
`WWW-Authenticate: Bearer`, through the one exception handler.

`last_used_at` is written at most once a minute per token, by a conditional
UPDATE: requests in between write nothing, and of racing requests at the minute
boundary only one UPDATE matches a row. On PostgreSQL that UPDATE rides in the
lookup itself (a data-modifying WITH in front of the SELECT), so the first use
in a minute costs no extra statement; elsewhere it is a second statement.
"""

from __future__ import annotations

import datetime as dt

from django.contrib.auth import get_user_model
from django.db import connections, router
from django.db.models import Q
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from integrations import tokens
from integrations.models import ApiToken

KEYWORD = "Bearer"
LAST_USED_RESOLUTION = dt.timedelta(minutes=1)
INVALID_TOKEN = "The bearer token is not valid (unknown or revoked)."


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
        digest = tokens.digest(plaintext)
        token = _find_and_touch(digest)
        if token is None:
            raise exceptions.AuthenticationFailed(INVALID_TOKEN)
        # The row was found by equality on the digest; compare again in constant
        # time so the decision itself never depends on where two strings differ.
        if not tokens.matches(plaintext, token.digest):
            raise exceptions.AuthenticationFailed(INVALID_TOKEN)
        if token.revoked_at is not None or not token.user.is_active:
            raise exceptions.AuthenticationFailed(INVALID_TOKEN)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return KEYWORD


def _find_and_touch(digest: str) -> ApiToken | None:
    """The token with this digest, its owner loaded, or None; its use recorded."""
    database = router.db_for_read(ApiToken)
    if connections[database].vendor != "postgresql":
        try:
            token = ApiToken.objects.select_related("user").get(digest=digest)
        except ApiToken.DoesNotExist:
            return None
        if token.revoked_at is None and token.user.is_active:
            _touch(token)
        return token
    return _find_and_touch_in_one_statement(database, digest)


def _find_and_touch_in_one_statement(database: str, digest: str) -> ApiToken | None:
    User = get_user_model()
    token_fields, user_fields = ApiToken._meta.concrete_fields, User._meta.concrete_fields
    connection = connections[database]
    quote = connection.ops.quote_name
    tokens_table, users_table = quote(ApiToken._meta.db_table), quote(User._meta.db_table)
    columns = ", ".join(
        [f"t.{quote(f.column)}" for f in token_fields]
        + [f"u.{quote(f.column)}" for f in user_fields]
    )
    now = timezone.now()
    # The UPDATE sees the row as it is when the statement starts and, racing
    # another request, re-checks its condition after that one commits; the
    # SELECT sees the row as it was before this statement's own UPDATE.
    sql = f"""
        WITH touched AS (
            UPDATE {tokens_table} SET "last_used_at" = %s
            WHERE "digest" = %s AND "revoked_at" IS NULL
              AND ("last_used_at" IS NULL OR "last_used_at" <= %s)
              AND "user_id" IN (SELECT "id" FROM {users_table} WHERE "is_active")
            RETURNING 1
        )
        SELECT {columns}, (SELECT count(*) FROM touched)
        FROM {tokens_table} t JOIN {users_table} u ON u."id" = t."user_id"
        WHERE t."digest" = %s
    """  # noqa: S608 (names from the models' metadata; values are parameters)
    with connection.cursor() as cursor:
        cursor.execute(sql.strip(), [now, digest, now - LAST_USED_RESOLUTION, digest])
        row = cursor.fetchone()
    if row is None:
        return None
    # psycopg returns these columns as the Python values the fields hold (no
    # field here needs a converter on PostgreSQL; a test compares with the ORM).
    n = len(token_fields)
    token = ApiToken.from_db(database, [f.attname for f in token_fields], row[:n])
    token.user = User.from_db(
        database, [f.attname for f in user_fields], row[n : n + len(user_fields)]
    )
    if row[-1]:
        token.last_used_at = now
    return token


def _touch(token: ApiToken) -> None:
    """Record use, at most once per LAST_USED_RESOLUTION per token."""
    now = timezone.now()
    stale_before = now - LAST_USED_RESOLUTION
    if token.last_used_at is not None and token.last_used_at > stale_before:
        return
    ApiToken.objects.filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lte=stale_before), pk=token.pk
    ).update(last_used_at=now)
    token.last_used_at = now
