"""The sign-in page says why the person is on it (issue 24, point 19): where
signing in continues to, when a signed-in page sent them there, and that their
session has ended, when the browser still carried a session that is gone."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from accounts.middleware import SESSION_ENDED

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"  # make_user's
CONTINUE = "Sign in to continue to"


def sign_in(client: Client, user) -> None:
    response = client.post("/accounts/login/", {"login": user.email, "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/"


def text(response) -> str:
    return " ".join(response.content.decode().split())


def test_someone_never_signed_in_is_told_where_signing_in_continues(client, make_user):
    user = make_user("me@example.com")
    response = client.get("/settings/tokens/", follow=True)

    assert response.redirect_chain == [("/accounts/login/?next=/settings/tokens/", 302)]
    page = text(response)
    assert (
        f'{CONTINUE} <code class="truncate" title="/settings/tokens/">/settings/tokens/</code>.'
        in page
    )
    assert SESSION_ENDED not in page  # nothing says they ever had one
    signed_in = client.post(
        "/accounts/login/?next=/settings/tokens/",
        {"login": user.email, "password": PASSWORD, "next": "/settings/tokens/"},
    )
    assert signed_in["Location"] == "/settings/tokens/"


def test_the_accord_is_named_as_such(client):
    page = text(client.get("/", follow=True))
    assert f"{CONTINUE} your Accord." in page


def test_the_sign_in_page_opened_by_itself_gives_no_reason(client):
    page = text(client.get("/accounts/login/"))
    assert CONTINUE not in page and SESSION_ENDED not in page


def test_only_a_page_of_this_site_is_named(client):
    page = text(client.get("/accounts/login/?next=https://evil.example/settings/"))
    assert CONTINUE not in page


def test_a_session_expired_on_the_server_is_told_it_has_ended(client, make_user):
    sign_in(client, make_user("me@example.com"))
    Session.objects.update(expire_date=timezone.now() - dt.timedelta(seconds=1))

    response = client.get("/settings/", follow=True)

    assert response.redirect_chain == [("/accounts/login/?next=/settings/", 302)]
    page = text(response)
    assert SESSION_ENDED in page and f"{CONTINUE} <code" in page
    # Said once: the dead cookie went with the redirect, and the message with the page.
    again = text(client.get("/settings/", follow=True))
    assert SESSION_ENDED not in again and CONTINUE in again


def test_a_password_change_elsewhere_ends_the_session_and_says_so(client, make_user):
    user = make_user("me@example.com")
    sign_in(client, user)
    elsewhere = Client()
    sign_in(elsewhere, user)
    changed = elsewhere.post(
        "/accounts/password/change/",
        {
            "oldpassword": PASSWORD,
            "password1": "a new long passphrase",
            "password2": "a new long passphrase",
        },
    )
    assert changed.status_code == 302

    page = text(client.get("/", follow=True))

    assert SESSION_ENDED in page
    assert elsewhere.get("/").status_code == 200  # the session that changed it goes on


def test_signing_out_is_not_a_session_that_ended(client, make_user):
    sign_in(client, make_user("me@example.com"))
    signed_out = text(client.post("/accounts/logout/", follow=True))
    assert SESSION_ENDED not in signed_out

    page = text(client.get("/settings/", follow=True))

    assert SESSION_ENDED not in page and CONTINUE in page


def test_a_live_session_of_someone_signing_up_is_not_an_ended_one(client):
    # A sign-up waiting for its code keeps a session, anonymous and alive.
    password = "a long enough passphrase"
    client.post(
        "/accounts/signup/",
        {
            "email": "new@example.com",
            "password1": password,
            "password2": password,
            "timezone": "UTC",
        },
    )

    page = text(client.get("/settings/", follow=True))

    assert SESSION_ENDED not in page
