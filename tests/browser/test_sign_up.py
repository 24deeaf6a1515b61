"""Sign-up in a real browser: the form, the mailed code typed in the browser
that signed up, and the person signed in on their Accord; an invited person
from the invitation's link to the request waiting for them; an unverified
sign-in can ask for a new code."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.cache import cache

from audit.services import Actor
from commitments import services
from commitments.models import OutboxEvent
from notifications.sending import nudge_send
from relay import outbox
from tests.harness.verification import LINK, mailed_code, mails_to

PASSWORD = "a long enough passphrase"


def test_sign_up_and_type_the_code_lands_signed_in_on_the_accord(page, mailbox, check_page):
    page.goto("/accounts/signup/")
    check_page(page, "sign-up-form")
    page.get_by_label("Email").fill("newcomer@example.com")
    page.get_by_label("Display name").fill("Newcomer")
    page.locator("#id_password1").fill(PASSWORD)
    page.locator("#id_password2").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()

    page.get_by_role("heading", name="Verify your e-mail address").wait_for()
    check_page(page, "verification-code")
    assert "We have sent a code to newcomer@example.com" in page.locator("main").inner_text()
    (message,) = mailbox
    assert message.to == ["newcomer@example.com"]
    assert "Hello from Commitments!" in message.body
    assert page.live_url in message.body  # SITE_URL: the service's own address

    page.get_by_label("Code").fill(mailed_code(message))
    page.get_by_role("button", name="Verify").click()

    page.wait_for_url(f"{page.live_url}/")
    assert "Newcomer" in page.locator("header").inner_text()
    check_page(page, "accord-after-sign-up")


def test_the_invited_person_signs_up_from_the_invitation_and_finds_the_request(
    page, mailbox, make_user, check_page
):
    lead = make_user("lead@example.com", display_name="Lead")
    c = services.commitment_ask(
        actor=Actor.for_user(lead),
        assignee_email="newcomer@example.com",
        description="Bring a shrubbery",
        deadline=None,
        send=True,
    )
    # What the worker does with the outbox row (tests/notifications covers a real one).
    (delivery_id,) = outbox.outbox_event_dispatch(event_id=OutboxEvent.objects.get(commitment=c).pk)
    nudge_send(delivery_id=delivery_id)
    (invitation,) = mails_to(mailbox, "newcomer@example.com")
    (link,) = [url for url in LINK.findall(invitation.body) if "/accounts/signup/" in url]

    page.goto(urlsplit(link).path + "?" + urlsplit(link).query)
    email = page.get_by_label("Email")
    assert email.input_value() == "newcomer@example.com"  # filled in, nothing more
    check_page(page, "sign-up-invited")
    page.locator("#id_password1").fill(PASSWORD)
    page.locator("#id_password2").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()
    page.get_by_role("heading", name="Verify your e-mail address").wait_for()
    page.get_by_label("Code").fill(mailed_code(mails_to(mailbox, "newcomer@example.com")[-1]))
    page.get_by_role("button", name="Verify").click()

    page.wait_for_url(f"{page.live_url}/")
    page.get_by_text("Bring a shrubbery").first.wait_for()
    assert "Lead" in page.locator("main").inner_text()


def test_an_unverified_sign_in_offers_a_new_code(page, mailbox, make_user, check_page):
    make_user("late@example.com", verified=False)
    page.goto("/accounts/login/")
    page.get_by_label("Email").fill("late@example.com")
    page.locator("#id_password").fill("correct horse battery")
    page.get_by_role("button", name="Sign in", exact=True).click()

    again = page.get_by_role("button", name="Send a new code")
    again.wait_for()
    check_page(page, "verification-code-again")
    assert len(mailbox) == 1  # the sign-in itself sent one

    cache.clear()  # allauth's limit since that mail is over (one per address per 10 s)
    again.click()
    page.get_by_text("A code is on its way to late@example.com.").wait_for()
    assert len(mailbox) == 2

    page.get_by_label("Code").fill(mailed_code(mailbox[-1]))
    page.get_by_role("button", name="Verify").click()
    page.wait_for_url(f"{page.live_url}/")
    assert "late" in page.locator("header").inner_text()
