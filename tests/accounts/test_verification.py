"""Nobody can claim an address they do not own: verification is mandatory, only
a verified primary address receives anything or signs in, and the primary
address changes only to a verified one."""

from __future__ import annotations

import importlib

import pytest
from allauth.account.models import EmailAddress
from django.apps import apps as django_apps
from django.contrib.auth import get_user_model
from django.core.management import call_command

from accounts.selectors import user_has_verified_primary_email, users_with_verified_primary_email
from commitments.models import Commitment
from tests.harness.api import INBOX, assert_envelope, inbox_body, mint, post_json
from tests.harness.verification import CODE_PAGE, code_in, mailed_code, mailed_paths

pytestmark = pytest.mark.django_db

User = get_user_model()
PASSWORD = "correct horse battery"


def signup(client, email: str, password: str = "a long enough passphrase"):
    data = {"email": email, "password1": password, "password2": password, "timezone": "UTC"}
    return client.post("/accounts/signup/", data)


def signed_in_user(client):
    return client.get("/settings/").wsgi_request.user


def type_the_code(client, message):
    """Types the code mailed in `message` on the code page, in `client`'s session."""
    return client.post(CODE_PAGE, {"code": mailed_code(message)})


def test_verification_is_mandatory_by_default():
    from django.conf import settings

    assert settings.ACCOUNT_EMAIL_VERIFICATION == "mandatory"


def test_a_sign_up_is_signed_in_only_after_typing_the_mailed_code(client, mailbox):
    signup(client, "new@example.com")
    user = User.objects.get()
    assert not signed_in_user(client).is_authenticated
    assert not user_has_verified_primary_email(user=user)

    response = type_the_code(client, mailbox[0])

    assert response.status_code == 302 and response["Location"] == "/"
    assert signed_in_user(client) == user
    assert user_has_verified_primary_email(user=user)
    client.post("/accounts/logout/")  # and from then on the password signs them in
    response = client.post(
        "/accounts/login/", {"login": "new@example.com", "password": "a long enough passphrase"}
    )
    assert response.status_code == 302 and response["Location"] == "/"
    assert signed_in_user(client) == user


def test_an_unverified_user_cannot_sign_in_and_is_sent_a_code(client, make_user, mailbox):
    user = make_user("pending@example.com", verified=False)

    response = client.post("/accounts/login/", {"login": user.email, "password": PASSWORD})

    assert response["Location"] == "/accounts/confirm-email/"
    assert not signed_in_user(client).is_authenticated
    assert [message.to for message in mailbox] == [["pending@example.com"]]
    assert mailed_code(mailbox[0])


def test_the_code_page_without_a_pending_sign_up_sends_to_sign_in(client):
    # The code, and the address it proves, live in the session that asked.
    response = client.get(CODE_PAGE)
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"


def test_with_the_console_backend_the_page_says_where_the_code_is(client, settings, capsys):
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
    signup(client, "new@example.com")
    page = " ".join(client.get(CODE_PAGE).content.decode().split())
    assert "We have sent a code to <strong>new@example.com</strong>" in page
    assert "prints e-mail instead of sending it" in page
    assert "the message with the code is in the terminal where the service runs" in page
    assert code_in(capsys.readouterr().out)  # and it is there


def test_with_a_real_backend_the_page_does_not_mention_the_terminal(client, mailbox):
    signup(client, "new@example.com")
    page = client.get(CODE_PAGE).content.decode()
    assert "Verify your e-mail address" in page
    assert "look in your spam folder" in page
    assert "terminal" not in page


def test_the_mail_has_the_code_and_no_link_that_verifies(client, mailbox):
    signup(client, "new@example.com")
    (message,) = mailbox
    assert mailed_code(message)
    assert "opening this e-mail verifies nothing" in " ".join(message.body.split())
    assert all("/accounts/confirm-email/" not in path for path in mailed_paths(message))


def test_a_wrong_code_verifies_nothing_and_three_end_the_attempt(client, mailbox):
    signup(client, "new@example.com")
    user = User.objects.get()

    first = client.post(CODE_PAGE, {"code": "BBBB-BBBB"})
    assert first.status_code == 200 and "Incorrect code" in first.content.decode()
    client.post(CODE_PAGE, {"code": "BBBB-BBBC"})
    third = client.post(CODE_PAGE, {"code": "BBBB-BBBD"})

    # allauth's EMAIL_VERIFICATION_BY_CODE_MAX_ATTEMPTS: the pending sign-up is over.
    assert third.status_code == 302 and third["Location"] == "/accounts/login/"
    type_the_code(client, mailbox[0])
    assert not user_has_verified_primary_email(user=user)
    assert not signed_in_user(client).is_authenticated


# --- claiming someone else's address -------------------------------------------------


def test_claiming_an_unverified_address_receives_nothing(client, assigner, mailbox):
    # Someone signs up as the new hire before the new hire does, and never
    # types the code (it went to the real new hire's mailbox).
    signup(Client := client, "newhire@example.com")
    claimed = User.objects.get(email="newhire@example.com")
    token = mint(assigner)

    inbox = post_json(Client, INBOX, inbox_body(assigneeEmail="newhire@example.com"), token=token)
    unknown = post_json(Client, INBOX, inbox_body(assigneeEmail="ghost@example.com"), token=token)

    # Refused exactly like an address nobody has: the caller learns nothing.
    assert_envelope(inbox, 400, "invalid_payload", details=True)
    assert inbox.json() == unknown.json()
    assert not Commitment.objects.exists()
    # Nudges go only to these people (notifications asks the same selector).
    assert claimed not in users_with_verified_primary_email()
    assert assigner in users_with_verified_primary_email()
    # And the claimer cannot sign in as the new hire.
    assert not signed_in_user(Client).is_authenticated


def test_the_selector_leaves_out_the_inactive_and_the_unverified(make_user):
    verified = make_user("ok@example.com")
    make_user("unverified@example.com", verified=False)
    make_user("inactive@example.com", is_active=False)
    assert list(users_with_verified_primary_email()) == [verified]


def test_a_verified_address_that_is_not_the_login_does_not_count(make_user):
    user = make_user("login@example.com", verified=False)
    EmailAddress.objects.filter(user=user).delete()
    EmailAddress.objects.create(user=user, email="other@example.com", verified=True, primary=True)
    assert not user_has_verified_primary_email(user=user)


# --- changing the primary address ----------------------------------------------------


def test_an_added_address_cannot_be_made_primary_without_verification(client, django_user_model):
    # A user whose own address was never verified (a session from before
    # verification was mandatory): allauth alone would let them make any added
    # address primary, and receive what is sent there.
    user = django_user_model.objects.create_user("me@example.com", PASSWORD)
    client.force_login(user)
    client.post("/accounts/email/", {"action_add": "", "email": "ceo@example.com"})

    response = client.post("/accounts/email/", {"action_primary": "", "email": "ceo@example.com"})

    assert response.status_code == 302
    user.refresh_from_db()
    assert user.email == "me@example.com"
    assert not EmailAddress.objects.filter(email="ceo@example.com", primary=True).exists()
    assert "Verify your current address first" in client.get("/settings/").content.decode()


def test_a_verified_user_cannot_make_an_unverified_address_primary(client, make_user):
    user = make_user("me@example.com")
    EmailAddress.objects.create(user=user, email="ceo@example.com", verified=False)
    client.force_login(user)

    client.post("/accounts/email/", {"action_primary": "", "email": "ceo@example.com"})

    user.refresh_from_db()
    assert user.email == "me@example.com"
    assert EmailAddress.objects.get(email="me@example.com").primary


def test_a_new_address_becomes_the_login_only_once_verified(client, make_user, mailbox):
    user = make_user("old@example.com")
    client.force_login(user)

    client.post("/accounts/email/", {"action_add": "", "email": "new@example.com"})
    user.refresh_from_db()
    assert user.email == "old@example.com"  # not yet
    assert user_has_verified_primary_email(user=user)

    type_the_code(client, mailbox[-1])

    user.refresh_from_db()
    assert user.email == "new@example.com"
    assert user_has_verified_primary_email(user=user)
    assert list(EmailAddress.objects.filter(user=user).values_list("email", flat=True)) == [
        "new@example.com"
    ]


# --- operators, existing users ---------------------------------------------------------


def test_create_user_makes_a_user_whose_address_counts_as_verified(client):
    call_command("create_user", "Op@Example.com", "--password", "a long enough passphrase")
    user = User.objects.get()
    assert user_has_verified_primary_email(user=user)
    response = client.post(
        "/accounts/login/", {"login": "op@example.com", "password": "a long enough passphrase"}
    )
    assert response["Location"] == "/"


def test_the_migration_gives_existing_users_an_unverified_primary_address(django_user_model):
    migration = importlib.import_module("accounts.migrations.0002_primary_email_rows_unverified")
    bare = django_user_model.objects.create_user("bare@example.com", PASSWORD)
    proved = django_user_model.objects.create_user("proved@example.com", PASSWORD)
    EmailAddress.objects.create(user=proved, email=proved.email, verified=True, primary=True)

    migration.add_primary_rows(django_apps, None)

    assert EmailAddress.objects.get(user=bare).verified is False
    assert EmailAddress.objects.get(user=bare).primary is True
    assert not user_has_verified_primary_email(user=bare)  # not grandfathered
    assert user_has_verified_primary_email(user=proved)  # kept


def test_the_email_page_shows_the_address_and_is_linked_from_settings(client, make_user):
    user = make_user("me@example.com")
    client.force_login(user)
    assert 'href="/accounts/email/"' in client.get("/settings/").content.decode()
    page = client.get("/accounts/email/")
    assert page.status_code == 200
    assert "me@example.com" in page.content.decode()


def test_the_reauthentication_page_shares_the_site_design(client, make_user):
    client.force_login(make_user("me@example.com"))
    page = client.get("/accounts/reauthenticate/").content.decode()
    assert "css/app.css" in page and 'name="password"' in page
