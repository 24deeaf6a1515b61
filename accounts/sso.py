"""Single sign-on with OpenID Connect: allauth's `openid_connect` provider, fed
from accounts.SsoProvider rows and held to the service's address rules
(docs/security.md, "Single sign-on").

- Apps: `list_apps` builds an unsaved allauth SocialApp per enabled provider,
  its secret decrypted only in memory; allauth's SocialApp table is never
  read, so no plaintext secret sits in the database, and a provider disabled
  (or deleted) is unknown to the next request: its sign-in and its callback
  answer 404.
- Flow: authorization code with PKCE (SOCIALACCOUNT_PROVIDERS), allauth's
  state (kept in the session, used once), and a nonce that allauth's provider
  does not send: `NonceCheckingProvider` sends one, keeps it in that state,
  and `pre_social_login` refuses an ID token without the same nonce.
- Addresses: an existing account is reached by a provider's address only
  when the provider is trusted for the address's domain and says the
  address is verified (`can_authenticate_by_email`); otherwise a sign-in
  with an address someone already has is refused (`pre_social_login`) and
  never signs in to that account.
"""

from __future__ import annotations

import secrets
from typing import Any

from allauth.account.models import EmailAddress
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.models import SocialApp, SocialLogin
from allauth.socialaccount.providers.base.constants import AuthError
from allauth.socialaccount.providers.openid_connect.provider import OpenIDConnectProvider
from django.contrib.auth import get_user_model
from django.http import HttpRequest

from accounts.models import SsoProvider
from lib.crypto import is_undecryptable

PROVIDER = OpenIDConnectProvider.id  # "openid_connect"


class NonceCheckingProvider(OpenIDConnectProvider):
    """allauth's OpenID Connect provider, sending a fresh nonce with each
    authorization request and keeping it in the sign-in's state."""

    def redirect(self, request: HttpRequest, process, next_url=None, data=None, **kwargs):
        nonce = secrets.token_urlsafe(32)
        auth_params = kwargs.pop("auth_params", None)
        if auth_params is None:
            auth_params = self.get_auth_params()
        auth_params = {**auth_params, "nonce": nonce}
        return super().redirect(
            request, process, next_url, data, auth_params=auth_params, nonce=nonce, **kwargs
        )


def social_app(provider: SsoProvider) -> SocialApp | None:
    """allauth's view of a provider (not saved), or None when its secret can
    no longer be decrypted."""
    if is_undecryptable(provider.client_secret):
        return None
    return SocialApp(
        provider=PROVIDER,
        provider_id=provider.slug,
        name=provider.name,
        client_id=provider.client_id,
        secret=str(provider.client_secret),
        settings={"server_url": provider.issuer, "oauth_pkce_enabled": True},
    )


def enabled_provider(slug: str) -> SsoProvider | None:
    return SsoProvider.objects.filter(slug=slug, enabled=True).first()


def address_taken(email: str) -> bool:
    User = get_user_model()
    return (
        User._default_manager.filter(email__iexact=email).exists()
        or EmailAddress.objects.filter(email__iexact=email).exists()
    )


def refuse(request: HttpRequest, sociallogin: SocialLogin, reason: str) -> None:
    """End this sign-in on allauth's error page (nobody is signed in)."""
    from allauth.socialaccount.helpers import render_authentication_error

    raise ImmediateHttpResponse(
        render_authentication_error(
            request,
            sociallogin.provider,
            error=AuthError.DENIED,
            exception=PermissionError(reason),
            extra_context={"sso_refusal": reason},
        )
    )


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def list_apps(
        self, request: HttpRequest, provider: Any = None, client_id: Any = None
    ) -> list[SocialApp]:
        rows = SsoProvider.objects.filter(enabled=True)
        if provider and provider != PROVIDER:
            rows = rows.filter(slug=provider)
        if client_id:
            rows = rows.filter(client_id=client_id)
        return [app for row in rows if (app := social_app(row)) is not None]

    def get_provider(self, request: HttpRequest, provider, client_id=None):
        found = super().get_provider(request, provider, client_id=client_id)
        if isinstance(found, OpenIDConnectProvider):
            return NonceCheckingProvider(request, app=found.app)
        return found

    def list_providers(self, request: HttpRequest):
        return [
            NonceCheckingProvider(request, app=p.app) if isinstance(p, OpenIDConnectProvider) else p
            for p in super().list_providers(request)
        ]

    def populate_user(self, request: HttpRequest, sociallogin: SocialLogin, data):
        user = super().populate_user(request, sociallogin, data)
        # The provider's name for the person, on one line, as the display name.
        name = " ".join(str(data.get("name") or "").split())
        field = type(user)._meta.get_field("display_name")
        user.display_name = name[: field.max_length]
        return user

    def can_authenticate_by_email(self, sociallogin: SocialLogin, email: str) -> bool:
        # Only a provider the operator trusts for this address's domain may
        # reach (and then link) an existing account by its address; the
        # caller passes only addresses the provider says are verified.
        provider = enabled_provider(sociallogin.account.provider)
        return bool(
            provider and provider.trusted_for_domain_addresses and provider.has_domain_of(email)
        )

    def pre_social_login(self, request: HttpRequest, sociallogin: SocialLogin) -> None:
        id_token = (sociallogin.account.extra_data or {}).get("id_token") or {}
        expected = (sociallogin.state or {}).get("nonce")
        if not expected or not secrets.compare_digest(
            str(id_token.get("nonce", "")), str(expected)
        ):
            refuse(request, sociallogin, "The identity provider's answer did not match.")
        process = (sociallogin.state or {}).get("process")
        if sociallogin.is_existing or (process == "connect" and request.user.is_authenticated):
            # Linked before (or just now, by the trusted rule), or being
            # linked to the account signed in.
            return
        for address in sociallogin.email_addresses:
            if address_taken(address.email):
                refuse(
                    request,
                    sociallogin,
                    "An account with this address exists: sign in to it with your password.",
                )


def redirect_uri(provider: SsoProvider) -> str:
    """The address to register at the provider as this service's redirect
    (callback) URI, on SITE_URL."""
    from django.urls import reverse

    from accounts.adapter import site_url

    return site_url(reverse("openid_connect_callback", kwargs={"provider_id": provider.slug}))
