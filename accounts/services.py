"""Writes of the accounts app."""

from __future__ import annotations

from typing import TYPE_CHECKING

from allauth.account.models import EmailAddress
from django.db import transaction

from accounts.signals import email_verified

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
