"""Reads of the accounts app."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef, Q, QuerySet

from accounts.models import SsoProvider, email_domain

if TYPE_CHECKING:
    from accounts.models import User


def verified_primary_email() -> Exists:
    """A query expression, true for a user row whose login address is its primary
    address and verified. For annotating a query that also needs users who fail it
    (the inbox tells them apart from unknown addresses in the same query)."""
    return Exists(
        EmailAddress.objects.filter(
            user_id=OuterRef("pk"), primary=True, verified=True, email__iexact=OuterRef("email")
        )
    )


def users_with_verified_primary_email() -> QuerySet[User]:
    """Active users whose login address is their primary address and is verified.

    Only these people receive anything from the service (commitments through the
    inbox, nudges) or sign in: an address nobody proved they own is nobody's.
    A QuerySet, so callers filter it further and it stays one query.
    """
    return get_user_model().objects.filter(verified_primary_email(), is_active=True)


def user_has_verified_primary_email(*, user: User) -> bool:
    return users_with_verified_primary_email().filter(pk=user.pk).exists()


@dataclass(frozen=True)
class SecurityKey:
    """A security key or passkey (WebAuthn) as Settings, Security lists it."""

    pk: int
    name: str
    passkey: bool  # signs in alone (a passkey the person chose to make)
    added: datetime
    last_used: datetime | None


@dataclass(frozen=True)
class SecondFactors:
    """What Settings, Security shows of a person's second factor."""

    totp_since: datetime | None  # when the authenticator app was set up; None: not set up
    recovery_codes_left: int | None  # unused recovery codes; None: none made
    security_keys: list[SecurityKey]

    @property
    def any(self) -> bool:
        return self.totp_since is not None or bool(self.security_keys)


def second_factors_of(*, user: User) -> SecondFactors:
    # One query: a person has at most one row of TOTP and of recovery codes
    # (allauth's rule), and any number of security keys.
    rows = list(Authenticator.objects.filter(user_id=user.pk).order_by("created_at", "pk"))
    by_type = {row.type: row for row in rows if row.type != Authenticator.Type.WEBAUTHN}
    totp = by_type.get(Authenticator.Type.TOTP)
    codes = by_type.get(Authenticator.Type.RECOVERY_CODES)
    left = None
    if codes is not None:
        left = recovery_codes_left(codes)
    keys = [
        SecurityKey(
            pk=row.pk,
            name=str(row.data.get("name") or "Security key"),
            passkey=bool(row.wrap().is_passwordless),
            added=row.created_at,
            last_used=row.last_used_at,
        )
        for row in rows
        if row.type == Authenticator.Type.WEBAUTHN
    ]
    return SecondFactors(
        totp_since=totp.created_at if totp is not None else None,
        recovery_codes_left=left,
        security_keys=keys,
    )


def recovery_codes_of(*, user: User) -> Authenticator | None:
    """The person's recovery codes' row (at most one), if they have codes."""
    return Authenticator.objects.filter(
        user_id=user.pk, type=Authenticator.Type.RECOVERY_CODES
    ).first()


def recovery_codes_left(codes: Authenticator) -> int:
    """Unused recovery codes: the hashes left in the row (accounts.recovery_codes
    removes a code's hash as it is used)."""
    hashes = codes.data.get("hashes")
    return len(hashes) if isinstance(hashes, list) else 0


def enforcing_provider(email: str) -> SsoProvider | None:
    """The enabled provider whose domains include this address's, if any."""
    domain = email.rpartition("@")[2].strip().lower()
    if not domain:
        return None
    for provider in SsoProvider.objects.filter(enabled=True):
        if domain in provider.domains:
            return provider
    return None


def sso_required_message(email: str) -> str | None:
    """Why a password sign-in or sign-up with this address is refused: its
    domain belongs to an enabled provider; None when it is not."""
    provider = enforcing_provider(email) if "@" in email else None
    if provider is None:
        return None
    domain = email.rpartition("@")[2].strip().lower()
    return f'People at {domain} sign in with {provider.name}: use "Sign in with {provider.name}".'


def sso_provider_origins() -> list[str]:
    """The origins (scheme://host[:port]) of the enabled providers' issuers."""
    origins: list[str] = []
    for issuer in SsoProvider.objects.filter(enabled=True).values_list("issuer", flat=True):
        bits = urlsplit(issuer)
        origin = f"{bits.scheme}://{bits.netloc}"
        if origin not in origins:
            origins.append(origin)
    return origins


@dataclass(frozen=True)
class SsoConnections:
    """What Settings, Security says of sign-in providers."""

    offered: bool  # at least one provider is enabled
    linked: list[str]  # the names of those this account is connected to


def sso_connections_of(*, user: User) -> SsoConnections:
    """Two queries: the account's connections, and the providers (the enabled
    ones and those it is connected to; a provider removed since is named by
    its id)."""
    from allauth.socialaccount.models import SocialAccount

    ids = list(
        SocialAccount.objects.filter(user_id=user.pk)
        .order_by("pk")
        .values_list("provider", flat=True)
    )
    rows = SsoProvider.objects.filter(Q(enabled=True) | Q(slug__in=ids)).values_list(
        "slug", "name", "enabled"
    )
    names: dict[str, str] = {}
    offered = False
    for slug, name, enabled in rows:
        names[slug] = name
        offered = offered or enabled
    return SsoConnections(offered=offered, linked=[names.get(slug, slug) for slug in ids])


def invitation_sso_hint(email: str) -> str | None:
    """What an invitation to this address (its mail, and the sign-up page its
    link opens) says when the address's domain must sign in with an SSO
    provider: to sign in with that provider, not to sign up with a password;
    None when the domain has no provider."""
    provider = enforcing_provider(email) if "@" in email else None
    if provider is None:
        return None
    domain = email_domain(email)
    return (
        f'People at {domain} sign in with {provider.name}: choose "Sign in with '
        f'{provider.name}" (no password to make here), and what was sent to {email.strip()} '
        "waits for you."
    )
