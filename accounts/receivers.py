"""Receivers of allauth's signals, its only hook on these auth events (see
docs/architecture.md, "Signals"): the page that completed a password or e-mail
change shows what it caused, a proved address is announced to the apps above
accounts, and a password reset ends the sign-in pending in that browser."""

from __future__ import annotations

from allauth.account import signals as allauth_signals
from allauth.account.internal.flows.email_verification_by_code import (
    EMAIL_VERIFICATION_CODE_SESSION_KEY,
)
from allauth.account.internal.stagekit import clear_login
from allauth.account.models import EmailAddress
from django.contrib import messages
from django.db import transaction
from django.dispatch import receiver

from accounts.signals import email_verified


@receiver(allauth_signals.password_changed)
@receiver(allauth_signals.password_set)
@receiver(allauth_signals.password_reset)
@receiver(allauth_signals.email_changed)
def show_security_notices(sender, request, user, **kwargs) -> None:
    # The notices are on the instance the flow saved (User.save collected them).
    notices = getattr(user, "security_notices", [])
    for notice in notices:
        messages.warning(request, notice)
    notices.clear()


@receiver(allauth_signals.email_confirmed)
def announce_verified_address(sender, request, email_address, **kwargs) -> None:
    # Once the confirmation is stored, so receivers see the verified address.
    user = email_address.user
    transaction.on_commit(lambda: email_verified.send(sender=type(user), user=user))


@receiver(allauth_signals.user_signed_up)
def announce_address_verified_by_provider(sender, request, user, **kwargs) -> None:
    # A first sign-in with an identity provider that said the address is
    # verified stores it verified without a code being typed, so no
    # email_confirmed comes: announce it here, as a code would have, so the
    # commitments and invitations waiting for the address reach the person.
    if kwargs.get("sociallogin") is None:
        return
    if EmailAddress.objects.filter(user=user, primary=True, verified=True).exists():
        transaction.on_commit(lambda: email_verified.send(sender=type(user), user=user))


@receiver(allauth_signals.password_reset)
def end_pending_sign_in(sender, request, user, **kwargs) -> None:
    # Someone who signs up with an address that already has an account (one
    # whose owner never typed its code, say) is mailed a password reset and left
    # on a code page no code passes. Once the reset is done in that browser,
    # signing in must start afresh (and mail a code), not return to that page.
    clear_login(request)
    request.session.pop(EMAIL_VERIFICATION_CODE_SESSION_KEY, None)
