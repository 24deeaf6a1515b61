"""Reads of the integrations app."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING

from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.db import connection

from lib.db import from_rows

if TYPE_CHECKING:
    from accounts.models import User


@cache
def _users_by_email_sql(count: int) -> str:
    """The inbox's user lookup, written out: it runs on every inbox call, and
    the ORM spent more time building the same query (an `Exists` annotation)
    than PostgreSQL spends running it (docs/benchmarks.md). The same query as
    `.alias(email_ci=Lower("email")).filter(email_ci__in=...).annotate(
    email_verified=accounts.selectors.verified_primary_email())`, for
    PostgreSQL and SQLite; tests/integrations/test_selectors.py holds the two
    to the same answers."""
    quote = connection.ops.quote_name
    user = get_user_model()._meta
    address = EmailAddress._meta
    columns = ", ".join(f"u.{quote(field.column)}" for field in user.concrete_fields)
    # Only names from the models' metadata and placeholders: no input.
    return (
        f"SELECT {columns}, EXISTS (SELECT 1 FROM {quote(address.db_table)} e"  # noqa: S608
        f" WHERE e.{quote('user_id')} = u.{quote(user.pk.column)}"
        f" AND e.{quote('primary')} AND e.{quote('verified')}"
        f" AND LOWER(e.{quote('email')}) = LOWER(u.{quote('email')})) AS email_verified"
        f" FROM {quote(user.db_table)} u"
        f" WHERE LOWER(u.{quote('email')}) IN ({', '.join(['%s'] * count)})"
    )


def users_by_email(*, emails: Iterable[str]) -> dict[str, User]:
    """Users whose e-mail is one of `emails`, compared case-insensitively, keyed by
    the lowercased address. One query, through the LOWER(email) unique index.

    Each user carries `can_receive`: active, with that address verified and
    primary (accounts.selectors), so the inbox judges the assignee without a
    second query."""
    wanted = sorted({email.strip().lower() for email in emails})
    if not wanted:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_users_by_email_sql(len(wanted)), wanted)
        rows = cursor.fetchall()
    found: dict[str, User] = {}
    # The rows as the users they are (lib.db.from_rows: a raw queryset's
    # instances, without its matching of columns by name), then the last
    # column, whether the address is verified.
    for user, row in zip(from_rows(get_user_model(), rows), rows, strict=True):
        user.email_verified = row[-1]
        user.can_receive = user.is_active and bool(row[-1])
        found[user.email.lower()] = user
    return found
