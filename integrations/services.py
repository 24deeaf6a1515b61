"""Writes of the integrations app: minting, revoking and expiring API tokens."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.timezones import zone_named
from audit.models import AuditAction
from audit.services import Actor, audit_event_record
from integrations import tokens
from integrations.models import SCOPES, ApiToken
from lib.client_address import normalise_networks
from lib.text import strip_blank

if TYPE_CHECKING:
    from accounts.models import User

TOKEN_NAME_MAX: int = ApiToken._meta.get_field("name").max_length  # type: ignore[assignment]  # a CharField: always set


@dataclass(frozen=True)
class MintedToken:
    """A new token and its plaintext. The plaintext exists only in this object:
    show it to the owner once and let it go."""

    token: ApiToken
    plaintext: str

    def __repr__(self) -> str:  # keep the secret out of logs and tracebacks
        return f"MintedToken(token={self.token!r}, plaintext='{self.token.prefix}…')"


def _clean_name(name: str) -> str:
    name = strip_blank(name or "")
    if not name:
        raise ValidationError({"name": "Give the token a name."})
    if len(name) > TOKEN_NAME_MAX:
        raise ValidationError({"name": f"At most {TOKEN_NAME_MAX} characters."})
    return name


def expiry_at_end_of(day: dt.date, tz_name: str) -> dt.datetime:
    """The last moment of `day` in the time zone `tz_name` (23:59:59.999999): a token
    that "expires on" a day works through that day, and the page shows that day."""
    return dt.datetime.combine(day, dt.time.max, tzinfo=zone_named(tz_name))


def _clean_scopes(scopes: Iterable[str] | None) -> list[str]:
    if scopes is None:
        return list(SCOPES)
    scopes = set(scopes)
    if unknown := scopes - set(SCOPES):
        raise ValidationError(
            {
                "scopes": f"Unknown scope {', '.join(sorted(unknown))}: the scopes are "
                f"{', '.join(SCOPES)}."
            }
        )
    if not scopes:
        raise ValidationError({"scopes": "Choose at least one scope."})
    return [scope for scope in SCOPES if scope in scopes]


def _clean_networks(networks: Iterable[str]) -> list[str]:
    try:
        return normalise_networks(networks)
    except ValueError as exc:
        raise ValidationError({"networks": str(exc)}) from None


def _name_taken(name: str) -> ValidationError:
    return ValidationError(
        {"name": f"You already have a live token named “{name}”. Choose another name."}
    )


@transaction.atomic
def api_token_mint(
    *,
    user: User,
    name: str,
    actor: Actor | None = None,
    expires_at: dt.datetime | None = None,
    scopes: Iterable[str] | None = None,
    networks: Iterable[str] = (),
) -> MintedToken:
    """Mint a token for `user`. Only its SHA-256 digest and display prefix are stored.

    `actor` is who asked for it (the user on the settings page by default, the
    system for the operator command); the audit trail records it. `expires_at`,
    if given, must be in the future: from then on the token is refused. The name
    must be free among the user's live (not revoked) tokens (a database
    constraint; the check here gives the clear message).

    `scopes` (default: all of SCOPES) are the operations the token may call;
    `networks` (CIDR, IPv4 or IPv6; default none: any address) the client
    networks it is accepted from, stored normalised. A bad one is a
    ValidationError naming it.
    """
    name = _clean_name(name)
    scopes = _clean_scopes(scopes)
    networks = _clean_networks(networks)
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError({"expires_at": "The expiry must be in the future."})
    if ApiToken.objects.filter(user=user, name=name, revoked_at__isnull=True).exists():
        raise _name_taken(name)
    plaintext = tokens.generate()
    try:
        with transaction.atomic():  # a savepoint: a lost race leaves the outer one usable
            token = ApiToken.objects.create(
                user=user,
                name=name,
                prefix=tokens.display_prefix(plaintext),
                digest=tokens.digest(plaintext),
                expires_at=expires_at,
                scopes=scopes,
                networks=networks,
            )
    except IntegrityError:  # minted with the same name at the same moment
        raise _name_taken(name) from None
    payload = {
        "name": token.name,
        "prefix": token.prefix,
        "ownerId": str(user.pk),
        "scopes": scopes,
        "networks": networks,
    }
    if expires_at is not None:
        payload["expiresAt"] = expires_at.isoformat()
    audit_event_record(
        actor=actor or Actor.for_user(user),
        subject=token,
        action=AuditAction.API_TOKEN_MINTED,
        payload=payload,
    )
    return MintedToken(token=token, plaintext=plaintext)


@transaction.atomic
def api_token_revoke(*, actor: Actor, token: ApiToken, reason: str = "") -> bool:
    """Revoke a token from now on. Returns False when it was already revoked.

    Whether `actor` may revoke this token is the caller's check (the settings
    page looks tokens up among the signed-in user's own; the admin is staff).
    `reason`, when given, is kept in the audit row (e.g. "password_changed").
    """
    now = timezone.now()
    revoked = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=now)
    if not revoked:
        return False
    token.revoked_at = now
    payload = {"name": token.name, "prefix": token.prefix, "ownerId": str(token.user_id)}
    if reason:
        payload["reason"] = reason
    audit_event_record(
        actor=actor, subject=token, action=AuditAction.API_TOKEN_REVOKED, payload=payload
    )
    return True


@transaction.atomic
def api_tokens_revoke_all(*, user: User, actor: Actor, reason: str) -> int:
    """Revoke every live token of `user`, one audit row each; the number revoked."""
    live = ApiToken.objects.select_for_update().filter(user=user, revoked_at__isnull=True)
    return sum(api_token_revoke(actor=actor, token=token, reason=reason) for token in live)


@transaction.atomic
def api_token_record_expiry(*, token: ApiToken) -> bool:
    """Audit the first refused use of an expired token, once per token.

    The conditional UPDATE lets exactly one of racing requests write the row.
    Returns whether this call wrote it.
    """
    now = timezone.now()
    first = ApiToken.objects.filter(pk=token.pk, expiry_recorded_at__isnull=True).update(
        expiry_recorded_at=now
    )
    if not first:
        return False
    token.expiry_recorded_at = now
    audit_event_record(
        actor=Actor.system(),
        subject=token,
        action=AuditAction.API_TOKEN_EXPIRED,
        payload={
            "name": token.name,
            "prefix": token.prefix,
            "ownerId": str(token.user_id),
            "expiresAt": token.expires_at.isoformat() if token.expires_at else None,
        },
    )
    return True
