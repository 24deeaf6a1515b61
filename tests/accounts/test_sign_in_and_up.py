"""Sign-up, sign-in, sign-out and password reset through allauth's pages."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db

User = get_user_model()
PASSWORD = "correct horse battery"


def signup(client, **overrides):
    data = {
        "email": "New.Person@Example.com",
        "password1": "a long enough passphrase",
        "password2": "a long enough passphrase",
        "display_name": "  New Person ",
        "timezone": "Europe/Berlin",
    }
    data.update(overrides)
    return client.post("/accounts/signup/", data)


def signed_in_user(client):
    return client.get("/settings/").wsgi_request.user


def test_it_signs_up_with_display_name_and_timezone(client, mailbox):
    response = signup(client)

    assert response.status_code == 302
    user = User.objects.get()
    assert user.email == "new.person@example.com"
    assert user.display_name == "New Person"
    assert user.timezone == "Europe/Berlin"
    assert user.check_password("a long enough passphrase")
    # Signed in only once the address is verified (tests/accounts/test_verification.py).
    assert response["Location"] == "/accounts/confirm-email/"
    assert not signed_in_user(client).is_authenticated
    assert [message.to for message in mailbox] == [["new.person@example.com"]]


def test_it_refuses_a_duplicate_email_in_other_case_without_telling(client, assigner, mailbox):
    response = signup(client, email="LEAD@Example.COM")

    # The page is the one any sign-up sees (nobody learns the address is taken);
    # the address's owner is told by e-mail instead.
    assert response.status_code == 302
    assert response["Location"] == "/accounts/confirm-email/"
    assert User.objects.filter(email__iexact="lead@example.com").count() == 1
    assert not signed_in_user(client).is_authenticated
    assert [message.to for message in mailbox] == [["lead@example.com"]]
    assert "already" in mailbox[0].body


def test_it_refuses_an_unknown_timezone_at_sign_up(client):
    response = signup(client, timezone="Mars/Olympus_Mons")

    assert response.status_code == 200
    assert not User.objects.exists()


def test_signup_page_offers_display_name_and_timezone(client):
    page = client.get("/accounts/signup/").content.decode()

    assert 'name="display_name"' in page
    assert 'name="timezone"' in page
    assert "css/app.css" in page


def test_it_signs_in_with_the_email_in_other_case(client, assigner):
    response = client.post(
        "/accounts/login/", {"login": "  LEAD@EXAMPLE.com ", "password": PASSWORD}
    )

    assert response.status_code == 302
    assert signed_in_user(client) == assigner


def test_it_refuses_a_wrong_password(client, assigner):
    response = client.post("/accounts/login/", {"login": assigner.email, "password": "nope"})

    assert response.status_code == 200
    assert not signed_in_user(client).is_authenticated


def test_it_signs_out_with_a_post(client, assigner):
    client.force_login(assigner)

    response = client.post("/accounts/logout/")

    assert response.status_code == 302
    assert not signed_in_user(client).is_authenticated


def test_a_get_to_sign_out_only_asks(client, assigner):
    # A link or an image must not be able to sign someone out.
    client.force_login(assigner)

    response = client.get("/accounts/logout/")

    assert response.status_code == 200
    assert signed_in_user(client) == assigner


def test_password_reset_mails_a_link_that_sets_a_new_password(client, assigner, mailbox):
    response = client.post("/accounts/password/reset/", {"email": "Lead@Example.com"})
    assert response.status_code == 302

    assert len(mailbox) == 1
    message = mailbox[0]
    assert message.to == ["lead@example.com"]
    link = re.search(r"https?://[^/\s]+(/accounts/password/reset/key/\S+)", message.body)
    assert link, message.body

    form_page = client.get(link.group(1), follow=True)
    assert form_page.status_code == 200
    set_password_url = form_page.redirect_chain[-1][0] if form_page.redirect_chain else link[1]
    done = client.post(
        set_password_url,
        {"password1": "a brand new passphrase", "password2": "a brand new passphrase"},
    )
    assert done.status_code == 302

    assigner.refresh_from_db()
    assert assigner.check_password("a brand new passphrase")
    assert not assigner.check_password(PASSWORD)


def test_password_reset_link_works_only_once(client, assigner, mailbox):
    client.post("/accounts/password/reset/", {"email": assigner.email})
    path = re.search(r"(/accounts/password/reset/key/\S+)", mailbox[0].body).group(1)
    set_password_url = client.get(path, follow=True).redirect_chain[-1][0]
    client.post(
        set_password_url, {"password1": "first new passphrase", "password2": "first new passphrase"}
    )
    client.logout()

    again = client.get(path, follow=True)
    assert again.redirect_chain == []
    assert "Bad token" in again.content.decode()  # sentence case (accounts_text)
    client.post(path, {"password1": "second new passphrase", "password2": "second new passphrase"})
    assigner.refresh_from_db()
    assert assigner.check_password("first new passphrase")


def test_auth_pages_share_the_site_design(client):
    for path in ("/accounts/login/", "/accounts/signup/", "/accounts/password/reset/"):
        page = client.get(path).content.decode()
        assert "css/app.css" in page, path
        assert 'class="topbar"' in page, path
        assert "Sign in" in page and "Sign up" in page, path


def test_password_change_page_shares_the_site_design_and_works(client, assigner):
    client.force_login(assigner)

    page = client.get("/accounts/password/change/").content.decode()
    response = client.post(
        "/accounts/password/change/",
        {
            "oldpassword": PASSWORD,
            "password1": "another long passphrase",
            "password2": "another long passphrase",
        },
    )

    assert "css/app.css" in page and "Signed in as" in page
    assert response.status_code == 302
    assigner.refresh_from_db()
    assert assigner.check_password("another long passphrase")
