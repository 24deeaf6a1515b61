"""allauth's adapter, so every link and name in the mail allauth sends is the
service's own: its name and SITE_URL, never the host a request happened to
reach (a proxy's, "127.0.0.1:3100"); and so the client's address that allauth's
limits count by is the service's one rule (lib.client_address)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from allauth.account import app_settings
from allauth.account.adapter import DefaultAccountAdapter
from django import forms
from django.conf import settings
from django.core.exceptions import PermissionDenied

from lib.client_address import client_ip

SERVICE_NAME = "Commitments"


@dataclass(frozen=True)
class ServiceSite:
    """What allauth's mail templates read as `current_site`: the service's name,
    and its address (SITE_URL) as the domain they print."""

    name: str
    domain: str


def service_site() -> ServiceSite:
    return ServiceSite(name=SERVICE_NAME, domain=settings.SITE_URL)


def site_url(location: str) -> str:
    """`location` (a path, or an absolute URL allauth built from the request)
    on the service's own address, SITE_URL."""
    bits = urlsplit(location)
    base = urlsplit(settings.SITE_URL)
    prefix = base.path.rstrip("/")
    return urlunsplit((base.scheme, base.netloc, prefix + bits.path, bits.query, bits.fragment))


class AccountAdapter(DefaultAccountAdapter):
    def send_mail(self, template_prefix: str, email: str, context: dict) -> None:
        context = {
            **context,
            "current_site": service_site(),
            # How long a mailed verification code works (its mail says so).
            "code_minutes": app_settings.EMAIL_VERIFICATION_BY_CODE_TIMEOUT // 60,
        }
        for name in ("password_reset_url", "signup_url"):
            if context.get(name):
                context[name] = site_url(context[name])
        super().send_mail(template_prefix, email, context)

    def format_email_subject(self, subject: str) -> str:
        return f"[{SERVICE_NAME}] {subject}"

    def get_reset_password_from_key_url(self, key: str) -> str:
        return site_url(super().get_reset_password_from_key_url(key))

    def pre_authenticate(self, request, **credentials) -> None:
        # A password sign-in for an address whose domain an enabled provider
        # holds is refused before the password is looked at (docs/security.md,
        # "Single sign-on"). Password sign-up: accounts.forms.SignupForm.
        from accounts.selectors import sso_required_message

        message = sso_required_message(str(credentials.get("email") or ""))
        if message:
            raise forms.ValidationError(message, code="sso_required")
        super().pre_authenticate(request, **credentials)

    def get_client_ip(self, request) -> str:
        # The service's one rule (lib.client_address), so allauth's limits, the
        # audit trail and the API tokens' networks agree on who the client is.
        # Like allauth's own: no address it may trust is PermissionDenied.
        address = client_ip(request)
        if not address:
            raise PermissionDenied("Unable to determine client IP address")
        return address
