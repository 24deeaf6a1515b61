"""Reads of the integrations app."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.db.models.functions import Lower

from accounts.selectors import verified_primary_email


def users_by_email(*, emails: Iterable[str]) -> dict[str, object]:
    """Users whose e-mail is one of `emails`, compared case-insensitively, keyed by
    the lowercased address. One query, through the LOWER(email) unique index.

    Each user carries `can_receive`: active, with that address verified and
    primary (accounts.selectors), so the inbox judges the assignee without a
    second query."""
    wanted = {email.strip().lower() for email in emails}
    users = (
        get_user_model()
        .objects.alias(email_ci=Lower("email"))
        .filter(email_ci__in=wanted)
        .annotate(email_verified=verified_primary_email())
        .order_by()
    )
    found = {}
    for user in users:
        user.can_receive = user.is_active and user.email_verified
        found[user.email.lower()] = user
    return found
