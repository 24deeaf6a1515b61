"""Writes of the integrations app: minting and revoking API tokens."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.services import Actor, audit_event_record
from integrations import tokens
from integrations.models import ApiToken

TOKEN_NAME_MAX = ApiToken._meta.get_field("name").max_length


@dataclass(frozen=True)
class MintedToken:
    """A new token and its plaintext. The plaintext exists only in this object:
    show it to the owner once and let it go."""

    token: ApiToken
    plaintext: str

    def __repr__(self) -> str:  # keep the secret out of logs and tracebacks
        return f"MintedToken(token={self.token!r}, plaintext='{self.token.prefix}…')"


def _clean_name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "Give the token a name."})
    if len(name) > TOKEN_NAME_MAX:
        raise ValidationError({"name": f"At most {TOKEN_NAME_MAX} characters."})
    return name


@transaction.atomic
def api_token_mint(*, user, name: str, actor: Actor | None = None) -> MintedToken:
    """Mint a token for `user`. Only its SHA-256 digest and display prefix are stored.

    `actor` is who asked for it (the user on the settings page by default, the
    system for the operator command); the audit trail records it.
    """
    name = _clean_name(name)
    plaintext = tokens.generate()
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=tokens.display_prefix(plaintext),
        digest=tokens.digest(plaintext),
    )
    audit_event_record(
        actor=actor or Actor.for_user(user),
        subject=token,
        action="api_token_minted",
        payload={"name": token.name, "prefix": token.prefix, "ownerId": str(user.pk)},
    )
    return MintedToken(token=token, plaintext=plaintext)


@transaction.atomic
def api_token_revoke(*, actor: Actor, token: ApiToken) -> bool:
    """Revoke a token from now on. Returns False when it was already revoked.

    Whether `actor` may revoke this token is the caller's check (the settings
    page looks tokens up among the signed-in user's own; the admin is staff).
    """
    now = timezone.now()
    revoked = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=now)
    if not revoked:
        return False
    token.revoked_at = now
    audit_event_record(
        actor=actor,
        subject=token,
        action="api_token_revoked",
        payload={"name": token.name, "prefix": token.prefix, "ownerId": str(token.user_id)},
    )
    return True
