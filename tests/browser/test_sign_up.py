"""Sign-up in a real browser: the form, the mailed link, and the person signed in
on their Accord; an unverified sign-in can ask for the link again."""

from __future__ import annotations

import re

from django.core.cache import cache

PASSWORD = "a long enough passphrase"


def mailed_link(message) -> str:
    return re.search(r"https?://\S+/accounts/confirm-email/\S+/", message.body).group(0)


def test_sign_up_and_follow_the_link_lands_signed_in_on_the_accord(page, mailbox, check_page):
    page.goto("/accounts/signup/")
    check_page(page, "sign-up-form")
    page.get_by_label("Email").fill("newcomer@example.com")
    page.get_by_label("Display name").fill("Newcomer")
    page.locator("#id_password1").fill(PASSWORD)
    page.locator("#id_password2").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()

    page.get_by_role("heading", name="Verify your e-mail address").wait_for()
    check_page(page, "verification-sent")
    (message,) = mailbox
    assert message.to == ["newcomer@example.com"]
    assert "Hello from Commitments!" in message.body
    link = mailed_link(message)
    assert link.startswith(page.live_url)  # SITE_URL: the service's own address

    page.goto(link)

    assert page.url == f"{page.live_url}/"
    assert "Newcomer" in page.locator("header").inner_text()
    check_page(page, "accord-after-sign-up")


def test_an_unverified_sign_in_offers_to_send_the_link_again(page, mailbox, make_user, check_page):
    make_user("late@example.com", verified=False)
    page.goto("/accounts/login/")
    page.get_by_label("Email").fill("late@example.com")
    page.locator("#id_password").fill("correct horse battery")
    page.get_by_role("button", name="Sign in").click()

    again = page.get_by_role("button", name="Send the link again")
    again.wait_for()
    check_page(page, "verification-sent-again")
    assert len(mailbox) == 1  # the sign-in itself sent one

    cache.clear()  # allauth's cooldown since that mail is over
    again.click()
    page.get_by_text("We sent a new link to late@example.com.").wait_for()
    assert len(mailbox) == 2

    page.goto(mailed_link(mailbox[-1]))
    assert page.url == f"{page.live_url}/"
    assert "late" in page.locator("header").inner_text()
