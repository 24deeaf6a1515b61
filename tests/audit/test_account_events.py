"""Sign-ins, failed sign-ins, passwords, e-mail addresses and the profile on the
audit trail, made through the pages people use (allauth's and Settings)."""

from __future__ import annotations

import json
import re

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import authenticate
from django.core import mail

from audit.models import AuditEvent
from tests.harness.verification import CODE_PAGE, mailed_code

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"
NEW_PASSWORD = "another long passphrase"


@pytest.fixture(autouse=True)
def _mail(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []


def events(user, action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.for_object(user).filter(action=action))


def only_event(user, action: str) -> AuditEvent:
    found = events(user, action)
    assert len(found) == 1, [e.action for e in AuditEvent.objects.all()]
    return found[0]


def assert_no_secret(event: AuditEvent, *secrets: str) -> None:
    text = json.dumps(event.payload)
    for secret in secrets:
        assert secret not in text


def sign_in(client, email: str, password: str):
    return client.post(
        "/accounts/login/", {"login": email, "password": password}, REMOTE_ADDR="203.0.113.7"
    )


def test_a_sign_in_is_recorded_with_the_client_address(client, assigner):
    response = sign_in(client, "lead@example.com", PASSWORD)

    assert response.status_code == 302
    event = only_event(assigner, "user_signed_in")
    assert (event.actor_kind, event.user) == ("user", assigner)
    assert event.payload == {"ip": "203.0.113.7", "method": "password", "second_factor": None}


def test_a_failed_sign_in_is_recorded_against_the_account_without_the_password(client, assigner):
    response = sign_in(client, "LEAD@example.com", "a wrong guess at it")

    assert response.status_code == 200
    event = only_event(assigner, "user_sign_in_failed")
    assert (event.actor_kind, event.user) == ("system", None)
    assert event.payload == {"ip": "203.0.113.7"}
    assert_no_secret(event, "a wrong guess at it")
    assert not events(assigner, "user_signed_in")


def test_a_failed_sign_in_for_an_unknown_address_records_nothing(client, assigner):
    sign_in(client, "nobody@example.com", "a wrong guess at it")

    assert not AuditEvent.objects.exists()


def test_a_failed_sign_in_through_djangos_own_forms_is_recorded_too(rf, staff):
    # Django's authentication form (the admin's, by default) names the login "username".
    request = rf.post("/admin/login/", REMOTE_ADDR="198.51.100.4")

    assert authenticate(request, username="STAFF@example.com", password="wrong guess") is None

    event = only_event(staff, "user_sign_in_failed")
    assert event.payload == {"ip": "198.51.100.4"}
    assert_no_secret(event, "wrong guess")


def test_a_password_change_is_recorded_without_the_passwords(client, assigner):
    client.force_login(assigner)

    response = client.post(
        "/accounts/password/change/",
        {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )

    assert response.status_code == 302
    event = only_event(assigner, "user_password_changed")
    assert (event.actor_kind, event.user) == ("user", assigner)
    assert_no_secret(event, PASSWORD, NEW_PASSWORD)
    assert set(event.payload) == {"ip"}


def test_a_password_reset_is_recorded_without_the_key_or_password(client, assigner):
    client.post("/accounts/password/reset/", {"email": "lead@example.com"})
    (message,) = mail.outbox
    link = re.search(r"https?://[^/\s]+(/accounts/password/reset/key/\S+/)", message.body)
    key_page = client.get(link.group(1))  # allauth moves the key into the session
    assert key_page.status_code == 302

    response = client.post(
        key_page["Location"], {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    )

    assert response.status_code == 302
    event = only_event(assigner, "user_password_reset")
    assert event.user == assigner
    assert_no_secret(event, NEW_PASSWORD, link.group(1).rstrip("/").rsplit("/", 1)[-1])


def test_changing_the_address_is_recorded_added_confirmed_and_made_primary(client, assigner):
    # ACCOUNT_CHANGE_EMAIL: the new address replaces the old one once it is confirmed,
    # by typing the code mailed to it (allauth stores the address only then).
    client.force_login(assigner)

    client.post("/accounts/email/", {"action_add": "", "email": "lead@corp.example"})
    assert not events(assigner, "user_email_added")
    assert not events(assigner, "user_email_primary_changed")

    confirmation = next(m for m in mail.outbox if "lead@corp.example" in m.to)
    code = mailed_code(confirmation)
    client.post(CODE_PAGE, {"code": code})
    added = only_event(assigner, "user_email_added")
    assert added.payload["email"] == "lead@corp.example"
    confirmed = only_event(assigner, "user_email_confirmed")
    assert confirmed.payload["email"] == "lead@corp.example"
    assert_no_secret(confirmed, code)
    primary = only_event(assigner, "user_email_primary_changed")
    assert (primary.payload["old"], primary.payload["new"]) == (
        "lead@example.com",
        "lead@corp.example",
    )
    assert not EmailAddress.objects.filter(email="lead@example.com").exists()
    for event in (added, confirmed, primary):
        assert (event.actor_kind, event.user) == ("user", assigner)


def test_removing_an_address_is_recorded(client, assigner):
    EmailAddress.objects.create(user=assigner, email="old@corp.example", verified=True)
    client.force_login(assigner)

    client.post("/accounts/email/", {"action_remove": "", "email": "old@corp.example"})

    removed = only_event(assigner, "user_email_removed")
    assert removed.payload["email"] == "old@corp.example"
    assert (removed.actor_kind, removed.user) == ("user", assigner)
    assert not EmailAddress.objects.filter(email="old@corp.example").exists()


def test_a_profile_change_is_recorded_with_old_and_new_values(client, assigner):
    client.force_login(assigner)

    response = client.post(
        "/settings/profile/", {"display_name": "The Lead", "timezone": "Europe/Paris"}
    )

    assert response.status_code == 302
    event = only_event(assigner, "user_profile_changed")
    assert (event.actor_kind, event.user) == ("user", assigner)
    assert event.payload == {
        "changes": {
            "display_name": {"old": "Lead", "new": "The Lead"},
            "timezone": {"old": "UTC", "new": "Europe/Paris"},
        }
    }


def test_saving_an_unchanged_profile_records_nothing(client, assigner):
    client.force_login(assigner)

    client.post("/settings/profile/", {"display_name": "Lead", "timezone": "UTC"})

    assert not events(assigner, "user_profile_changed")
