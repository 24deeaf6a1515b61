from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from accounts.models import User

pytestmark = pytest.mark.django_db


def test_emails_are_stored_in_one_spelling_and_found_in_any(make_user):
    user = make_user("Mixed.Case@Example.COM")
    assert user.email == "mixed.case@example.com"
    assert User.objects.get_by_natural_key("MIXED.case@example.com") == user


def test_the_database_refuses_the_same_email_in_another_case(make_user):
    user = make_user("dup@example.com")
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        # Raw SQL bypasses save()'s lowercasing: the functional index still holds.
        cursor.execute(
            f"INSERT INTO {User._meta.db_table} (id, password, is_superuser, email, "
            "display_name, timezone, is_staff, is_active, date_joined) "
            "VALUES (%s, '', %s, 'DUP@example.com', '', 'UTC', %s, %s, %s)",
            [
                "0" * 31 + "1"
                if connection.vendor == "sqlite"
                else "00000000-0000-0000-0000-000000000001",
                False,
                False,
                True,
                user.date_joined,
            ],
        )


def test_an_unknown_time_zone_is_refused(make_user):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        make_user("tz@example.com", timezone="Mars/Olympus")
    assert not User.objects.filter(email="tz@example.com").exists()


def test_name_falls_back_to_the_email_local_part(make_user):
    assert make_user("arthur@example.com").name == "arthur"
    assert make_user("lancelot@example.com", display_name="Lancelot").name == "Lancelot"
