"""python manage.py create_user EMAIL --password PW [--name N] [--staff] [--superuser]"""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db

User = get_user_model()
PASSWORD = "a long enough passphrase"


def create_user(*args: str) -> str:
    out = StringIO()
    call_command("create_user", *args, stdout=out)
    return out.getvalue()


def test_it_creates_a_user_who_can_sign_in():
    output = create_user("Someone@Example.com", "--password", PASSWORD)

    user = User.objects.get()
    assert user.email == "someone@example.com"
    assert not user.is_staff and not user.is_superuser
    assert authenticate(username="someone@example.com", password=PASSWORD) == user
    assert "someone@example.com" in output and str(user.id) in output


def test_it_sets_the_display_name():
    create_user("someone@example.com", "--password", PASSWORD, "--name", "Some One")

    assert User.objects.get().display_name == "Some One"


def test_staff_may_use_the_admin_but_is_not_superuser():
    create_user("staff@example.com", "--password", PASSWORD, "--staff")

    user = User.objects.get()
    assert user.is_staff and not user.is_superuser


def test_superuser_is_also_staff():
    create_user("root@example.com", "--password", PASSWORD, "--superuser")

    user = User.objects.get()
    assert user.is_staff and user.is_superuser


def test_it_refuses_an_existing_email_in_other_case(assigner):
    with pytest.raises(CommandError, match="already exists"):
        create_user("LEAD@Example.com", "--password", PASSWORD, "--superuser")

    assert User.objects.count() == 1
    assigner.refresh_from_db()
    assert not assigner.is_superuser


def test_it_refuses_an_invalid_email():
    with pytest.raises(CommandError, match="e-mail"):
        create_user("not-an-email", "--password", PASSWORD)

    assert not User.objects.exists()


def test_it_needs_a_password():
    with pytest.raises(CommandError, match="password"):
        create_user("someone@example.com")

    assert not User.objects.exists()


@pytest.mark.parametrize("weak", ["", "   ", "short", "password123", "12345678901"])
def test_it_refuses_a_password_sign_up_would_refuse(weak):
    with pytest.raises(CommandError, match="password"):
        create_user("someone@example.com", "--password", weak)

    assert not User.objects.exists()
