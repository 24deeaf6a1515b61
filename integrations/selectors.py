"""Reads of the integrations app."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.db.models.functions import Lower


def users_by_email(*, emails: Iterable[str]) -> dict[str, object]:
    """Users whose e-mail is one of `emails`, compared case-insensitively, keyed by
    the lowercased address. One query, through the LOWER(email) unique index."""
    wanted = {email.strip().lower() for email in emails}
    users = (
        get_user_model()
        .objects.alias(email_ci=Lower("email"))
        .filter(email_ci__in=wanted)
        .order_by()
    )
    return {user.email.lower(): user for user in users}
