"""Writes of the accounts app."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from accounts.models import SsoProvider
from accounts.signals import email_verified
from audit.models import AuditAction
from audit.services import Actor, audit_event_record
from lib.outbound import is_loopback_host

if TYPE_CHECKING:
    from accounts.models import User


@transaction.atomic
def user_email_mark_verified(*, user: User) -> EmailAddress:
    """Record the user's login address as their verified primary address.

    For addresses someone vouches for without a code being typed: the
    operator's `create_user`, and test fixtures. Everyone else proves an address
    by typing the code allauth mails to it, in the browser that asked.
    """
    EmailAddress.objects.filter(user=user, primary=True).exclude(email__iexact=user.email).update(
        primary=False
    )
    address, _ = EmailAddress.objects.update_or_create(
        user=user,
        email__iexact=user.email,
        defaults={"email": user.email, "verified": True, "primary": True},
    )
    transaction.on_commit(lambda: email_verified.send(sender=type(user), user=user))
    return address


@transaction.atomic
def user_second_factors_remove(*, user: User, reason: str) -> list[str]:
    """Remove every second factor of the user (authenticator app, security
    keys and passkeys, recovery codes), for a person who lost theirs: they
    sign in with the password alone and set up a new one. An operator's act,
    recorded on the audit trail with the reason given. Returns the types
    removed (empty: there were none, and nothing is recorded)."""
    factors = list(
        Authenticator.objects.select_for_update().filter(user_id=user.pk).order_by("type")
    )
    if not factors:
        return []
    removed = [factor.type for factor in factors]
    Authenticator.objects.filter(pk__in=[factor.pk for factor in factors]).delete()
    audit_event_record(
        actor=Actor.system(),
        subject=user,
        action=AuditAction.SECOND_FACTOR_RESET_BY_OPERATOR,
        payload={"factors": removed, "reason": reason},
    )
    return removed


class SsoProviderError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def sso_provider_add(
    *,
    name: str,
    issuer: str,
    client_id: str,
    client_secret: str,
    domains: list[str],
    trusted_for_domain_addresses: bool,
    actor: Actor,
    enforces_mfa: bool = False,
) -> SsoProvider:
    """Register an OpenID Connect provider (enabled), its secret encrypted, and
    audit it; the payload names the provider, never its secret."""
    name, issuer, client_id = name.strip(), issuer.strip().rstrip("/"), client_id.strip()
    slug = slugify(name)[:60].strip("-")
    if not slug:
        raise SsoProviderError("The name needs at least one letter or digit.")
    if not client_secret:
        raise SsoProviderError("The client secret is empty.")
    bits = urlsplit(issuer)
    if bits.scheme != "https" and not (
        bits.scheme == "http" and is_loopback_host(bits.hostname or "")
    ):
        raise SsoProviderError(
            f"issuer: {issuer!r} must be an https:// URL (plain http only on loopback)."
        )
    provider = SsoProvider(
        name=name,
        slug=slug,
        issuer=issuer,
        client_id=client_id,
        client_secret=client_secret,
        domains=domains,
        trusted_for_domain_addresses=trusted_for_domain_addresses,
        enforces_mfa=enforces_mfa,
    )
    try:
        provider.full_clean()
    except ValidationError as exc:
        raise SsoProviderError(
            "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in exc.message_dict.items())
        ) from exc
    with transaction.atomic():
        provider.save(force_insert=True)
        audit_event_record(
            actor=actor,
            subject=provider,
            action=AuditAction.SSO_PROVIDER_ADDED,
            payload={
                "name": provider.name,
                "slug": provider.slug,
                "issuer": provider.issuer,
                "clientId": provider.client_id,
                "domains": provider.domains,
                "trustedForDomainAddresses": provider.trusted_for_domain_addresses,
                "enforcesMfa": provider.enforces_mfa,
            },
        )
    return provider
