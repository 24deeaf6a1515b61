"""What the operator commands share: the person an EMAIL argument names."""

from __future__ import annotations

from django.core.management.base import CommandError

from accounts.models import User


def active_user_for_command(email: str, *, why_active: str = "") -> User:
    """The active user with this address (any case), or CommandError saying why not."""
    email = email.strip()
    try:
        user = User.objects.get(email__iexact=email)
    except User.DoesNotExist:
        raise CommandError(f"No user has the e-mail {email!r}.") from None
    if not user.is_active:
        raise CommandError(f"{user.email} is deactivated{'; ' + why_active if why_active else ''}.")
    return user
