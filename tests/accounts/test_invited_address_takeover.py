"""Nobody takes over an invited address, and what waits for it, without the
code mailed to it typed in their own browser (issue 24, point 1).

The invitation mail tells the real person to sign up with their address; before
verification by code, a GET of the mailed link verified the address for whoever
had registered it, so a mail gateway that opens links (or the real person
clicking a link they did not ask for) handed the waiting commitments, and every
later request to the address, to someone else. Two ways in: signing up with the
address and a password of one's own, and adding the address to an existing
account on /accounts/email/. Each is tried here with everything the real
person's mail holds, opened and typed everywhere but in the attacker's session.
"""

from __future__ import annotations

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client

from accounts.selectors import user_has_verified_primary_email, users_with_verified_primary_email
from audit.services import Actor
from commitments import services
from commitments.models import Commitment, Invitation, Status
from tests.harness.verification import CODE_PAGE, mailed_code, mailed_codes, mailed_paths, mails_to

pytestmark = pytest.mark.django_db

User = get_user_model()
INVITED = "newcomer@example.com"
ATTACKER_PASSWORD = "the attacker's own passphrase"
PASSWORD = "a long enough passphrase"


@pytest.fixture
def waiting(assigner, mailbox) -> Commitment:
    """A request to an address with no account: it waits on an invitation."""
    commitment = services.commitment_ask(
        actor=Actor.for_user(assigner),
        assignee_email=INVITED,
        description="Water the shrubbery",
        deadline=None,
        send=True,
    )
    assert commitment.assignee is None and commitment.invitation is not None
    assert commitment.invitation.email == INVITED
    return commitment


def signup(client: Client, email: str, password: str = PASSWORD):
    return client.post(
        "/accounts/signup/",
        {"email": email, "password1": password, "password2": password, "timezone": "UTC"},
    )


def later() -> None:
    """Some seconds pass: allauth mails an address one code per 10 seconds
    (its `confirm_email` limit, counted in the cache)."""
    cache.clear()


def open_everything_elsewhere(message, signed_in_elsewhere) -> list[str]:
    """What happens to the real person's mail outside the attacker's browser: a
    gateway (no session) opens every link in it; the person opens them too, in
    a browser signed in to another account, and types the code there and in a
    browser with no session at all. Returns the codes typed."""
    for path in mailed_paths(message):
        Client().get(path)
        signed_in_elsewhere.get(path)
    codes = mailed_codes(message)
    for code in codes:
        for browser in (Client(), signed_in_elsewhere):
            browser.get(CODE_PAGE)
            browser.post(CODE_PAGE, {"code": code})
    return codes


def assert_nothing_reaches(account, waiting: Commitment) -> None:
    account.refresh_from_db()
    waiting.refresh_from_db()
    assert waiting.assignee is None and waiting.status == Status.PENDING_HANDSHAKE
    assert Invitation.objects.get().claimed_by is None
    assert account not in users_with_verified_primary_email()
    assert not EmailAddress.objects.filter(email__iexact=INVITED, verified=True).exists()


def test_signing_up_with_an_invited_address_takes_nothing_without_the_code(
    waiting, make_user, mailbox, django_capture_on_commit_callbacks
):
    attacker = Client()
    signup(attacker, INVITED, ATTACKER_PASSWORD)
    squatter = User.objects.get(email=INVITED)
    (message,) = mails_to(mailbox, INVITED)  # the code, in the real person's mailbox
    bystander = Client()
    bystander.force_login(make_user("someone.else@example.com"))

    with django_capture_on_commit_callbacks(execute=True):
        typed = open_everything_elsewhere(message, bystander)
        # The attacker's own session has the pending code but not the code.
        wrong = attacker.post(CODE_PAGE, {"code": "BBBB-BBBB"})

    assert_nothing_reaches(squatter, waiting)
    assert len(typed) == 1  # the mail's code was typed, elsewhere, to no effect
    assert wrong.status_code == 200 and "Incorrect code" in wrong.content.decode()
    assert not attacker.get("/settings/").wsgi_request.user.is_authenticated
    # Nor can the attacker sign in with the address and their password.
    attacker.post("/accounts/login/", {"login": INVITED, "password": ATTACKER_PASSWORD})
    assert not attacker.get("/settings/").wsgi_request.user.is_authenticated


def test_adding_an_invited_address_to_an_account_takes_nothing_without_the_code(
    waiting, make_user, mailbox, django_capture_on_commit_callbacks
):
    mallory = make_user("mallory@example.com")
    attacker = Client()
    attacker.force_login(mallory)
    attacker.post("/accounts/email/", {"action_add": "", "email": INVITED})
    (message,) = mails_to(mailbox, INVITED)
    bystander = Client()
    bystander.force_login(make_user("someone.else@example.com"))

    with django_capture_on_commit_callbacks(execute=True):
        typed = open_everything_elsewhere(message, bystander)

    mallory.refresh_from_db()
    assert mallory.email == "mallory@example.com"
    assert user_has_verified_primary_email(user=mallory)  # her own address still works
    waiting.refresh_from_db()
    assert waiting.assignee is None
    assert Invitation.objects.get().claimed_by is None
    assert not EmailAddress.objects.filter(email__iexact=INVITED, verified=True).exists()
    assert len(typed) == 1


def test_no_mailed_link_verifies_an_address(client):
    # The link flow's address, /accounts/confirm-email/<key>/, is gone.
    assert client.get("/accounts/confirm-email/some-key/").status_code == 404


# --- the real person ------------------------------------------------------------------


def test_the_invited_person_who_types_the_code_receives_the_waiting_request(
    client, waiting, mailbox, django_capture_on_commit_callbacks
):
    signup(client, INVITED)
    newcomer = User.objects.get(email=INVITED)
    (message,) = mails_to(mailbox, INVITED)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(CODE_PAGE, {"code": mailed_code(message)})

    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/settings/").wsgi_request.user == newcomer
    waiting.refresh_from_db()
    assert waiting.assignee == newcomer and waiting.status == Status.PENDING_HANDSHAKE
    assert Invitation.objects.get().claimed_by == newcomer
    page = client.get("/").content.decode()
    assert "Water the shrubbery" in page


def test_the_invited_person_gets_the_address_back_from_a_squatter(
    client, waiting, mailbox, django_capture_on_commit_callbacks
):
    # Someone signed up with the address first and never got the code. The real
    # person's sign-up is told the address has an account; a password reset
    # (mailed to the address) makes it theirs, and the code at their sign-in
    # proves it.
    squatter_browser = Client()
    signup(squatter_browser, INVITED, ATTACKER_PASSWORD)
    account = User.objects.get(email=INVITED)
    later()

    signup(client, INVITED)
    assert User.objects.filter(email=INVITED).count() == 1
    client.post("/accounts/password/reset/", {"email": INVITED})
    reset = next(m for m in mails_to(mailbox, INVITED) if "/password/reset/key/" in m.body)
    (key_path,) = [p for p in mailed_paths(reset) if "/password/reset/key/" in p]
    key_page = client.get(key_path)
    client.post(key_page["Location"], {"password1": PASSWORD, "password2": PASSWORD})
    later()
    client.post("/accounts/login/", {"login": INVITED, "password": PASSWORD})
    code = mailed_code(mails_to(mailbox, INVITED)[-1])

    with django_capture_on_commit_callbacks(execute=True):
        client.post(CODE_PAGE, {"code": code})

    assert client.get("/settings/").wsgi_request.user == account
    waiting.refresh_from_db()
    assert waiting.assignee == account
    # The squatter's password no longer works, and their session pends nothing.
    squatter_browser.post(CODE_PAGE, {"code": code})
    squatter_browser.post("/accounts/login/", {"login": INVITED, "password": ATTACKER_PASSWORD})
    assert not squatter_browser.get("/settings/").wsgi_request.user.is_authenticated


def test_a_person_who_adds_the_invited_address_and_types_the_code_receives_it(
    client, waiting, make_user, mailbox, django_capture_on_commit_callbacks
):
    person = make_user("old.address@example.com")
    client.force_login(person)
    client.post("/accounts/email/", {"action_add": "", "email": INVITED})
    (message,) = mails_to(mailbox, INVITED)
    page = client.get(CODE_PAGE).content.decode()
    assert INVITED in page and "old.address@example.com" in page  # which account

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(CODE_PAGE, {"code": mailed_code(message)})

    assert response.status_code == 302 and response["Location"] == "/accounts/email/"
    person.refresh_from_db()
    assert person.email == INVITED and user_has_verified_primary_email(user=person)
    waiting.refresh_from_db()
    assert waiting.assignee == person
