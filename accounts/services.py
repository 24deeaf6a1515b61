"""Writes of the accounts app."""

from __future__ import annotations

from typing import TYPE_CHECKING

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.db import transaction

from accounts.signals import email_verified
from audit.models import AuditAction
from audit.services import Actor, audit_event_record

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
    """Remove every second factor of the user (authenticator app, recovery
    codes), for a person who lost theirs: they sign in with the password alone
    and set up a new one. An operator's act, recorded on the audit trail with
    the reason given. Returns the types removed (empty: there were none, and
    nothing is recorded)."""
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
