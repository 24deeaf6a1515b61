"""Sign-ins, passwords, e-mail addresses and second factors on the audit trail.

Django and allauth announce these with signals, and signals are the only
hook they offer, so this module receives them (connected in
`AuditConfig.ready`). Each receiver runs in the request that made the change
and writes one event whose subject is the account and whose actor is its
owner; nothing here carries a domain side effect.

Payloads hold the client's address (as allauth sees it, through the
configured trusted proxies) and e-mail addresses, never a password, a reset
key or a session id.

A failed sign-in is recorded only against an account that exists (matched by
its login address, the primary or an allauth secondary one), with the system
as actor: nobody is signed in, and the event says that someone tried this
account from this address. A failed sign-in for an address nobody has is not
recorded: there is no subject to hang it on (an event names its subject by
content type and UUID), and writing rows for addresses an anonymous caller
chooses would let anyone grow the append-only table at will. The sign-in
rate limits still count those attempts.
"""

from __future__ import annotations

from typing import Any

from allauth.account import signals as allauth_signals
from allauth.account.internal.flows.login import AUTHENTICATION_METHODS_SESSION_KEY
from allauth.account.models import EmailAddress
from allauth.mfa import signals as mfa_signals
from django.contrib.auth import get_user_model
from django.contrib.auth import signals as auth_signals
from django.http import HttpRequest

from audit.models import AuditAction
from audit.services import Actor, audit_event_record
from lib.client_address import client_ip

# Keys of the credentials a sign-in form hands to `authenticate()` that name
# the account: allauth's form uses "email", Django's (admin) form "username".
LOGIN_KEYS = ("email", "username", "login")


def client_address(request: HttpRequest | None) -> str | None:
    """The client's address by the service's one rule (lib.client_address), or
    None when there is no request or no address it may trust."""
    return client_ip(request) if request is not None else None


def _record_for_user(
    request: HttpRequest | None, user, action: AuditAction, **payload: Any
) -> None:
    audit_event_record(
        actor=Actor.for_user(user),
        subject=user,
        action=action,
        payload={"ip": client_address(request), **payload},
    )


def _account_named(login: str):
    User = get_user_model()
    user = User._default_manager.filter(email__iexact=login).first()
    if user is not None:
        return user
    address = EmailAddress.objects.filter(email__iexact=login).select_related("user").first()
    return address.user if address is not None else None


def sign_in_how(request: HttpRequest | None) -> dict[str, str | None]:
    """How this sign-in was made, from the steps allauth records in the
    session just before it signs someone in: `method` ("password", "passkey",
    "sso", or allauth's word for another way; None when nothing was recorded,
    e.g. a test's forced sign-in), `provider` (the SSO provider's id, as in its
    sign-in URL; SSO only) and `second_factor` (the type of the factor given
    after the first step: "totp", "webauthn", "recovery_codes"; None when
    none was asked)."""
    records: list[dict[str, Any]] = []
    if request is not None and hasattr(request, "session"):
        records = request.session.get(AUTHENTICATION_METHODS_SESSION_KEY) or []
    second: str | None = None
    for record in reversed(records):
        method = record.get("method")
        if method == "mfa" and record.get("passwordless"):
            # A passkey signs in alone (it verified its user itself).
            return {"method": "passkey", "second_factor": None}
        if method == "mfa":
            if second is None and not record.get("reauthenticated"):
                second = str(record.get("type") or "")
            continue
        if method == "socialaccount":
            return {
                "method": "sso",
                "provider": str(record.get("provider") or ""),
                "second_factor": second,
            }
        return {"method": str(method or ""), "second_factor": second}
    return {"method": None, "second_factor": second}


def on_signed_in(sender, request: HttpRequest | None = None, user=None, **kwargs) -> None:
    if user is None or user.pk is None:
        return
    how = sign_in_how(request)
    action = (
        AuditAction.USER_SIGNED_IN_WITH_SSO
        if how["method"] == "sso"
        else AuditAction.USER_SIGNED_IN
    )
    _record_for_user(request, user, action, **how)


def on_sign_in_failed(
    sender, credentials: dict[str, Any] | None = None, request=None, **kwargs
) -> None:
    credentials = credentials or {}
    login = next((credentials[k] for k in LOGIN_KEYS if isinstance(credentials.get(k), str)), "")
    user = _account_named(login.strip()) if login.strip() else None
    if user is None:
        return  # no account to record it against (see the module's docstring)
    audit_event_record(
        actor=Actor.system(),
        subject=user,
        action=AuditAction.USER_SIGN_IN_FAILED,
        payload={"ip": client_address(request)},
    )


def on_password_changed(sender, request=None, user=None, **kwargs) -> None:
    _record_for_user(request, user, AuditAction.USER_PASSWORD_CHANGED)


def on_password_set(sender, request=None, user=None, **kwargs) -> None:
    _record_for_user(request, user, AuditAction.USER_PASSWORD_SET)


def on_password_reset(sender, request=None, user=None, **kwargs) -> None:
    _record_for_user(request, user, AuditAction.USER_PASSWORD_RESET)


def on_email_added(sender, request=None, user=None, email_address=None, **kwargs) -> None:
    _record_for_user(request, user, AuditAction.USER_EMAIL_ADDED, email=email_address.email)


def on_email_confirmed(sender, request=None, email_address=None, **kwargs) -> None:
    _record_for_user(
        request, email_address.user, AuditAction.USER_EMAIL_CONFIRMED, email=email_address.email
    )


def on_email_changed(
    sender, request=None, user=None, from_email_address=None, to_email_address=None, **kwargs
) -> None:
    # allauth sends this when the primary address changes.
    _record_for_user(
        request,
        user,
        AuditAction.USER_EMAIL_PRIMARY_CHANGED,
        old=from_email_address.email if from_email_address is not None else None,
        new=to_email_address.email,
    )


def on_email_removed(sender, request=None, user=None, email_address=None, **kwargs) -> None:
    _record_for_user(request, user, AuditAction.USER_EMAIL_REMOVED, email=email_address.email)


def on_authenticator_added(sender, request=None, user=None, authenticator=None, **kwargs) -> None:
    _record_for_user(request, user, AuditAction.USER_SECOND_FACTOR_ADDED, factor=authenticator.type)


def on_authenticator_removed(sender, request=None, user=None, authenticator=None, **kwargs) -> None:
    _record_for_user(
        request, user, AuditAction.USER_SECOND_FACTOR_REMOVED, factor=authenticator.type
    )


def on_authenticator_reset(sender, request=None, user=None, authenticator=None, **kwargs) -> None:
    # allauth sends this when new recovery codes replace the old ones.
    _record_for_user(request, user, AuditAction.USER_RECOVERY_CODES_MADE, factor=authenticator.type)


def on_second_factor_failed(sender, request=None, user=None, authenticator=None, **kwargs) -> None:
    # A wrong code after a right password: someone may hold the password.
    audit_event_record(
        actor=Actor.system(),
        subject=user,
        action=AuditAction.USER_SECOND_FACTOR_FAILED,
        payload={
            "ip": client_address(request),
            "factor": authenticator.type if authenticator is not None else None,
            "reauthentication": bool(kwargs.get("reauthentication")),
        },
    )


def connect() -> None:
    """Connect the receivers (once: dispatch_uid makes a second call a no-op)."""
    pairs = [
        (auth_signals.user_logged_in, on_signed_in),
        (auth_signals.user_login_failed, on_sign_in_failed),
        (allauth_signals.password_changed, on_password_changed),
        (allauth_signals.password_set, on_password_set),
        (allauth_signals.password_reset, on_password_reset),
        (allauth_signals.email_added, on_email_added),
        (allauth_signals.email_confirmed, on_email_confirmed),
        (allauth_signals.email_changed, on_email_changed),
        (allauth_signals.email_removed, on_email_removed),
        (mfa_signals.authenticator_added, on_authenticator_added),
        (mfa_signals.authenticator_removed, on_authenticator_removed),
        (mfa_signals.authenticator_reset, on_authenticator_reset),
        (mfa_signals.authentication_failed, on_second_factor_failed),
    ]
    for signal, receiver in pairs:
        signal.connect(receiver, dispatch_uid=f"audit.{receiver.__name__}")
