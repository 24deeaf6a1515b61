"""Personal API tokens. Only a SHA-256 digest and a display prefix are stored."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = ["SCOPES", "SCOPES_BEFORE_READ", "ApiToken", "default_scopes", "scopes_before_read"]

# What a token may call: `inbox` (POST /api/v1/inbox), `sync` (POST
# /api/v1/sync) and `read` (GET /api/v1/commitments and .../{id}).
SCOPES = ("inbox", "sync", "read")
# The scopes before `read` existed: what tokens minted before scopes existed
# were given (migration 0006). Frozen, so that migration never widens a token.
SCOPES_BEFORE_READ = ("inbox", "sync")


def default_scopes() -> list[str]:
    """Every scope: what a token minted now has unless its owner chose fewer.
    Tokens minted before `read` existed keep what they had (no migration
    widens a stored token)."""
    return list(SCOPES)


def scopes_before_read() -> list[str]:
    """The default of migration 0006, which gave tokens minted before scopes
    existed both scopes of the time: never more, whatever SCOPES becomes."""
    return list(SCOPES_BEFORE_READ)


class ApiToken(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, db_index=True)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Optional: from this moment the token is refused like a revoked one.
    expires_at = models.DateTimeField(null=True, blank=True)
    # When the first refused use after expiry was audited (once per token).
    expiry_recorded_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The operations it may call, a subset of SCOPES in SCOPES' order.
    scopes = models.JSONField(default=default_scopes)
    # Client networks it is accepted from, in canonical CIDR form
    # (lib.client_address.normalise_network); empty: from anywhere.
    networks = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # A reloaded form or a second click cannot leave two live tokens
            # that nobody can tell apart.
            models.UniqueConstraint(
                fields=["user", "name"],
                condition=models.Q(revoked_at__isnull=True),
                name="apitoken_live_name_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def is_expired(self, now=None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())
