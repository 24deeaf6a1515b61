"""Django admin for users: e-mail login, no username."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db

User = get_user_model()
LIST = "/admin/accounts/user/"


def listed(response) -> set[str]:
    return {u.email for u in response.context["cl"].result_list}


def test_staff_sees_users_with_email_name_staff_and_joined(staff_client, assigner, assignee):
    response = staff_client.get(LIST)

    assert response.status_code == 200
    assert listed(response) == {"staff@example.com", "lead@example.com", "knight@example.com"}
    page = response.content.decode()
    for column in ("column-email", "column-display_name", "column-is_staff", "column-date_joined"):
        assert column in page


def test_it_searches_by_email(staff_client, assigner, assignee):
    assert listed(staff_client.get(LIST, {"q": "KNIGHT@"})) == {"knight@example.com"}


def test_it_adds_a_user_by_email(staff_client):
    response = staff_client.post(
        f"{LIST}add/",
        {
            "email": "New@Example.com",
            "usable_password": "true",
            "password1": "a long enough passphrase",
            "password2": "a long enough passphrase",
        },
    )

    assert response.status_code == 302
    user = User.objects.get(email="new@example.com")
    assert user.check_password("a long enough passphrase")


def test_it_refuses_to_add_an_existing_email_in_other_case(staff_client, assigner):
    response = staff_client.post(
        f"{LIST}add/",
        {
            "email": "LEAD@example.com",
            "usable_password": "true",
            "password1": "a long enough passphrase",
            "password2": "a long enough passphrase",
        },
    )

    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    assert User.objects.filter(email__iexact="lead@example.com").count() == 1


def test_the_change_page_edits_profile_fields(staff_client, assigner):
    page = staff_client.get(f"{LIST}{assigner.pk}/change/")

    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="display_name"' in html and 'name="timezone"' in html
    assert 'name="username"' not in html


def test_a_non_staff_user_is_refused(client, assigner):
    client.force_login(assigner)

    response = client.get(LIST)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_the_admin_offers_one_place_for_email_addresses(staff_client):
    page = staff_client.get("/admin/").content.decode()

    assert "/admin/accounts/user/" in page
    assert "/admin/account/emailaddress/" not in page
