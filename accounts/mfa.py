"""The second factor (allauth.mfa): what the service adds to allauth's.

allauth keeps a person's factors as `allauth.mfa.models.Authenticator` rows,
their secrets in a JSON column. The TOTP secret is encrypted here with the
service's field encryption (lib.crypto, FIELD_ENCRYPTION_KEYS) through
allauth's adapter hooks, so a copy of the database alone does not yield it
(docs/security.md, "Second factor"). The recovery codes are the service's own,
stored as keyed hashes: accounts.recovery_codes.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from allauth.account.authentication import get_authentication_records
from allauth.mfa.adapter import DefaultMFAAdapter
from allauth.mfa.models import Authenticator
from allauth.mfa.utils import is_mfa_enabled
from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.http import HttpRequest

from accounts.adapter import SERVICE_NAME
from lib.crypto import (
    DecryptionError,
    ReencryptReport,
    decrypt_str,
    encrypt_str,
    reencrypt,
    under_newest_key,
)


class MFAAdapter(DefaultMFAAdapter):
    def encrypt(self, text: str) -> str:
        return encrypt_str(text)

    def decrypt(self, encrypted_text: str) -> str:
        return decrypt_str(encrypted_text)

    def get_totp_issuer(self) -> str:
        # The name an authenticator app shows beside the code.
        return SERVICE_NAME

    def get_public_key_credential_rp_entity(self) -> dict[str, str]:
        # The WebAuthn relying party is the service's own host (SITE_URL), not
        # whatever Host header a request came with: a key made for the service
        # works at its address only, and the browser refuses it elsewhere.
        return {"id": urlsplit(settings.SITE_URL).hostname or "", "name": SERVICE_NAME}


# The factors that count as a second factor; recovery codes alone do not
# (allauth makes them with one, as the way back when it is lost).
SECOND_FACTOR_TYPES = [Authenticator.Type.TOTP, Authenticator.Type.WEBAUTHN]


def user_has_second_factor(user: AbstractBaseUser) -> bool:
    """True when the person signs in with a second factor (an authenticator
    app, a security key or a passkey)."""
    return is_mfa_enabled(user, types=SECOND_FACTOR_TYPES)


def session_used_second_factor(request: HttpRequest) -> bool:
    """True when this session's sign-in (or a re-authentication in it) gave a
    second factor, as allauth records it."""
    return any(
        record.get("method") == "mfa"
        for record in get_authentication_records(request, request.user)
    )


def session_signed_in_with_mfa_provider(request: HttpRequest) -> bool:
    """True when this session's sign-in (or a re-authentication in it) went
    through an enabled SSO provider the operator marked as enforcing a second
    factor of its own (SsoProvider.enforces_mfa): its sign-in counts as one
    for the admin (docs/security.md, "Staff and the admin")."""
    from accounts.models import SsoProvider

    slugs = {
        str(record.get("provider"))
        for record in get_authentication_records(request, request.user)
        if record.get("method") == "socialaccount" and record.get("provider")
    }
    return bool(slugs) and (
        SsoProvider.objects.filter(slug__in=slugs, enabled=True, enforces_mfa=True).exists()
    )


# The keys of Authenticator.data that hold an encrypted value: the TOTP
# secret (MFAAdapter) and the recovery codes' HMAC key (accounts.recovery_codes).
ENCRYPTED_KEYS = ("secret", "key")


def second_factors_reencrypt(report: ReencryptReport) -> None:
    """Rewrite the encrypted secrets of every second factor that is not under
    the newest of FIELD_ENCRYPTION_KEYS (`manage.py reencrypt_secrets`, through
    lib.crypto.reencrypt_all), one row at a time, each under its row lock."""
    for pk in Authenticator.objects.values_list("pk", flat=True).order_by("pk"):
        with transaction.atomic():
            row = Authenticator.objects.select_for_update().filter(pk=pk).first()
            if row is None:
                continue  # removed in the meantime
            changed = False
            for name in ENCRYPTED_KEYS:
                token = row.data.get(name)
                if not isinstance(token, str) or not token:
                    continue
                if under_newest_key(token):
                    report.current += 1
                    continue
                try:
                    row.data[name] = reencrypt(token)
                except DecryptionError:
                    report.unreadable.append(f"mfa.Authenticator.data[{name}] {pk}")
                    continue
                report.rewritten += 1
                changed = True
            if changed:
                row.save(update_fields=["data"])
