"""Sign-up that ends signed in: the code mailed, typed in the browser that signed
up, verifies the address and signs the person in on their Accord; the mail names
the service and its address (SITE_URL); an unverified sign-in can ask for a new code."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache

from accounts.selectors import user_has_verified_primary_email
from tests.harness.verification import CODE_PAGE, mailed_code

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


def current_user(client):
    return client.get("/settings/").wsgi_request.user


def test_the_mailed_code_signs_the_new_person_in_on_their_accord(client, mailbox):
    signup(client, "new@example.com")
    user = User.objects.get()

    response = client.post(CODE_PAGE, {"code": mailed_code(mailbox[0])})

    assert response.status_code == 302 and response["Location"] == "/"
    assert current_user(client) == user
    assert user_has_verified_primary_email(user=user)


def test_the_code_typed_in_another_browser_verifies_nothing(client, mailbox):
    # Before verification by code, the link opened anywhere verified the address
    # (signing nobody in): a mail gateway opening links verified it for whoever
    # had signed up with it. The code works only in the session that asked.
    from django.test import Client

    signup(client, "new@example.com")
    other = Client()
    response = other.post(CODE_PAGE, {"code": mailed_code(mailbox[0])})

    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert not current_user(other).is_authenticated
    assert not user_has_verified_primary_email(user=User.objects.get())


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


def test_an_unverified_sign_in_offers_a_new_code(client, mailbox, make_user):
    make_user("late@example.com", verified=False)
    response = client.post(
        "/accounts/login/",
        {"login": "late@example.com", "password": "correct horse battery"},
        follow=True,
    )
    html = response.content.decode()
    assert "Send a new code" in html
    assert len(mailbox) == 1  # allauth sends one at the sign-in

    cache.clear()  # allauth's limit since that mail is over (one per address per 10 s)
    response = client.post(CODE_PAGE, {"action": "resend"}, follow=True)
    assert "late@example.com" in response.content.decode()
    assert len(mailbox) == 2 and mailbox[1].to == ["late@example.com"]
    assert mailed_code(mailbox[1]) != mailed_code(mailbox[0])

    # At once again: allauth's limit holds, and the page says so.
    response = client.post(CODE_PAGE, {"action": "resend"}, follow=True)
    assert response.status_code == 200 and "a moment ago" in response.content.decode()
    assert len(mailbox) == 2

    # The newest code counts; the first one no longer does.
    client.post(CODE_PAGE, {"code": mailed_code(mailbox[0])})
    assert not current_user(client).is_authenticated
    client.post(CODE_PAGE, {"code": mailed_code(mailbox[1])})
    assert current_user(client).email == "late@example.com"


def test_a_new_code_without_a_pending_sign_in_sends_nothing(client, mailbox, make_user):
    make_user("late@example.com", verified=False)
    response = client.post(CODE_PAGE, {"action": "resend"})
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
