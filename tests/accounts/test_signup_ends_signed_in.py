"""Sign-up that ends signed in: the mailed link verifies the address and, in the
browser that signed up, signs the person in on their Accord; the mail names the
service and its address (SITE_URL); an unverified sign-in can ask for the link again."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache

from accounts.selectors import user_has_verified_primary_email

pytestmark = pytest.mark.django_db

User = get_user_model()
PASSWORD = "a long enough passphrase"
SITE = "https://commitments.example.com"


@pytest.fixture(autouse=True)
def _site_url(settings):
    settings.SITE_URL = SITE


def signup(client, email: str):
    data = {"email": email, "password1": PASSWORD, "password2": PASSWORD, "timezone": "UTC"}
    return client.post("/accounts/signup/", data)


def link_in(message) -> str:
    return re.search(r"https?://\S+/accounts/confirm-email/\S+/", message.body).group(0)


def current_user(client):
    return client.get("/settings/").wsgi_request.user


def test_the_mailed_link_signs_the_new_person_in_on_their_accord(client, mailbox):
    signup(client, "new@example.com")
    user = User.objects.get()
    link = link_in(mailbox[0])
    assert link.startswith(f"{SITE}/accounts/confirm-email/")

    response = client.get(link.removeprefix(SITE))

    assert response.status_code == 302 and response["Location"] == "/"
    assert current_user(client) == user
    assert user_has_verified_primary_email(user=user)


def test_the_link_opened_in_another_browser_verifies_but_signs_nobody_in(
    client, mailbox, django_user_model
):
    from django.test import Client

    signup(client, "new@example.com")
    other = Client()
    response = other.get(link_in(mailbox[0]).removeprefix(SITE))

    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert not current_user(other).is_authenticated
    assert user_has_verified_primary_email(user=User.objects.get())


def test_the_mail_names_the_service_and_its_address_not_the_requests_host(client, mailbox):
    signup(client, "new@example.com")
    (message,) = mailbox
    assert message.subject.startswith("[Commitments] ")
    assert "Hello from Commitments!" in message.body
    assert SITE in message.body
    assert "testserver" not in message.body


def test_a_password_reset_link_is_on_the_service_address(client, mailbox, make_user):
    make_user("known@example.com")
    client.post("/accounts/password/reset/", {"email": "known@example.com"})
    (message,) = mailbox
    assert f"{SITE}/accounts/password/reset/key/" in message.body
    assert "testserver" not in message.body


def test_an_unverified_sign_in_offers_to_send_the_link_again(client, mailbox, make_user):
    make_user("late@example.com", verified=False)
    response = client.post(
        "/accounts/login/",
        {"login": "late@example.com", "password": "correct horse battery"},
        follow=True,
    )
    html = response.content.decode()
    assert "Send the link again" in html
    assert len(mailbox) == 1  # allauth sends one at the sign-in

    cache.clear()  # the cooldown since that mail is over
    response = client.post("/accounts/confirm-email/resend/", follow=True)
    assert "We sent a new link to late@example.com." in response.content.decode()
    assert len(mailbox) == 2 and mailbox[1].to == ["late@example.com"]

    # At once again: allauth's limit holds, and the page says so.
    response = client.post("/accounts/confirm-email/resend/", follow=True)
    assert "a moment ago" in response.content.decode()
    assert len(mailbox) == 2

    cache.clear()
    client.get(link_in(mailbox[1]).removeprefix(SITE))
    assert current_user(client).email == "late@example.com"


def test_send_again_without_a_pending_sign_in_sends_nothing(client, mailbox, make_user):
    make_user("late@example.com", verified=False)
    response = client.post("/accounts/confirm-email/resend/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert mailbox == []


def test_a_sign_up_with_a_taken_address_mails_links_on_the_service_address(
    client, mailbox, make_user
):
    make_user("known@example.com")
    signup(client, "known@example.com")
    (message,) = mailbox
    assert f"{SITE}/accounts/password/reset/" in message.body
    assert "testserver" not in message.body
