"""A password change or reset, and an e-mail change, revoke every live API token of
that person: one audited revocation per token, with the reason, and the page
says so. A token minted by whoever had the password (or had claimed the
address) must not outlive the change."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command

from audit.models import AuditEvent
from audit.services import Actor
from integrations import services
from integrations.models import ApiToken
from tests.harness.api import INBOX, inbox_body, post_json
from tests.harness.verification import CODE_PAGE, mailed_code

PASSWORD = "correct horse battery"
NEW_PASSWORD = "a brand new passphrase"


@pytest.fixture(autouse=True)
def _fresh_rate_limits(db):
    # allauth counts reset and verification mails in the cache.
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def minted(assigner, outsider):
    """Two live tokens of the assigner, one already revoked, and someone else's."""
    live = [services.api_token_mint(user=assigner, name=name) for name in ("Jira", "CI")]
    gone = services.api_token_mint(user=assigner, name="Old").token
    services.api_token_revoke(actor=Actor.for_user(assigner), token=gone)
    services.api_token_mint(user=outsider, name="Theirs")
    return live


def _revocations(reason: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action="api_token_revoked", payload__reason=reason))


def _assert_revoked(minted, reason: str) -> None:
    assert ApiToken.objects.filter(user__email="lead@example.com", revoked_at=None).count() == 0
    assert ApiToken.objects.get(name="Theirs").revoked_at is None
    events = _revocations(reason)
    assert sorted(event.payload["name"] for event in events) == ["CI", "Jira"]
    assert {event.payload["prefix"] for event in events} == {m.token.prefix for m in minted}


def test_a_password_change_revokes_the_tokens_audited_and_says_so(client, assigner, minted):
    client.force_login(assigner)

    response = client.post(
        "/accounts/password/change/",
        {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
        follow=True,
    )

    _assert_revoked(minted, "password_changed")
    page = response.content.decode()
    assert "Your 2 API tokens were revoked because your password changed" in page
    for m in minted:
        assert post_json(client, INBOX, inbox_body(), token=m.plaintext).status_code == 401


def test_a_password_reset_revokes_the_tokens_audited_and_says_so(
    client, assigner, minted, mailoutbox
):
    client.post("/accounts/password/reset/", {"email": assigner.email})
    path = re.search(r"(/accounts/password/reset/key/\S+)", mailoutbox[0].body).group(1)
    set_password_url = client.get(path, follow=True).redirect_chain[-1][0]

    response = client.post(
        set_password_url, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD}, follow=True
    )

    _assert_revoked(minted, "password_changed")
    assert "Your 2 API tokens were revoked because your password changed" in (
        response.content.decode()
    )


def test_a_password_changed_in_the_admin_revokes_the_tokens(client, staff, assigner, minted):
    client.force_login(staff)

    response = client.post(
        f"/admin/accounts/user/{assigner.pk}/password/",
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
    )

    assert response.status_code == 302
    _assert_revoked(minted, "password_changed")


def test_changepassword_revokes_the_tokens(assigner, minted, monkeypatch):
    from django.contrib.auth.management.commands import changepassword

    monkeypatch.setattr(changepassword.getpass, "getpass", lambda prompt="": NEW_PASSWORD)
    call_command("changepassword", assigner.email, stdout=io.StringIO())

    _assert_revoked(minted, "password_changed")


def test_an_email_change_revokes_the_tokens_once_the_new_address_is_verified(
    client, assigner, minted, mailoutbox
):
    client.force_login(assigner)
    client.post("/accounts/email/", {"action_add": "", "email": "lead@newcorp.example"})
    assert not _revocations("email_changed")  # nothing changed yet

    response = client.post(CODE_PAGE, {"code": mailed_code(mailoutbox[-1])}, follow=True)

    assigner.refresh_from_db()
    assert assigner.email == "lead@newcorp.example"
    assert ApiToken.objects.filter(user=assigner, revoked_at=None).count() == 0
    assert len(_revocations("email_changed")) == 2
    assert "revoked because your e-mail address changed" in response.content.decode()


def test_a_profile_change_revokes_nothing(client, assigner, minted):
    client.force_login(assigner)
    client.post("/settings/profile/", {"display_name": "Lead", "timezone": "Europe/Berlin"})
    assigner.display_name = "Lead Two"
    assigner.save()
    assert ApiToken.objects.filter(user=assigner, revoked_at=None).count() == 2


def test_a_change_with_no_live_tokens_shows_no_token_message(client, outsider):
    client.force_login(outsider)
    ApiToken.objects.all().delete()
    response = client.post(
        "/accounts/password/change/",
        {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
        follow=True,
    )
    assert "API token" not in response.content.decode()


def test_a_password_hash_upgrade_at_sign_in_revokes_nothing(client, assigner, minted, settings):
    # The stored hash is MD5 (the tests' hasher); with a stronger hasher first,
    # Django re-hashes the same password at sign-in. That is no password change.
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
        "django.contrib.auth.hashers.MD5PasswordHasher",
    ]
    response = client.post("/accounts/login/", {"login": assigner.email, "password": PASSWORD})

    assert response.status_code == 302
    assigner.refresh_from_db()
    assert assigner.password.startswith("pbkdf2_")
    assert ApiToken.objects.filter(user=assigner, revoked_at=None).count() == 2


def test_an_email_changed_outside_allauth_revokes_too(assigner, minted):
    # Django admin or a shell: User.save() is the one path every change takes.
    assigner.email = "lead@elsewhere.example"
    assigner.save()
    assert len(_revocations("email_changed")) == 2


def test_disabling_password_sign_in_in_the_admin_revokes_the_tokens(
    client, staff, assigner, minted
):
    client.force_login(staff)

    response = client.post(
        f"/admin/accounts/user/{assigner.pk}/password/",
        {"usable_password": "false", "unset-password": "1"},
    )

    assert response.status_code == 302
    assigner.refresh_from_db()
    assert not assigner.has_usable_password()
    _assert_revoked(minted, "password_changed")
