"""The account pages (allauth's) speak in sentence case, as the rest of the service."""

from __future__ import annotations

import pytest

from accounts.templatetags.accounts_text import sentence_case

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Sign In", "Sign in"),
        ("Change Password", "Change password"),
        ("Re-send Verification", "Re-send verification"),
        ("Remember Me", "Remember me"),
        ("Manage API Tokens", "Manage API tokens"),
        ("Connect Slack", "Connect Slack"),
        ("<b>Sign In</b>", "<b>Sign In</b>"),  # markup: left as it is
    ],
)
def test_sentence_case(text, expected):
    assert sentence_case(text) == expected


def test_the_sign_in_page_is_in_sentence_case(client):
    page = client.get("/accounts/login/").content.decode()
    assert "Remember me" in page and "Remember Me" not in page
    assert "<h1>Sign in</h1>" in page
    assert "<title>Sign in · Commitments</title>" in page


def test_the_password_page_is_in_sentence_case(client, make_user):
    client.force_login(make_user("ada@example.com"))
    page = client.get("/accounts/password/change/").content.decode()
    assert "Current password" in page and "Current Password" not in page
    assert "New password" in page
