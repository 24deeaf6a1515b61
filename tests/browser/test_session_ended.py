"""A session that ends while the person is on a page (issue 24, point 19): the
next page they open, or the Accord's own look for news, lands on the sign-in
page saying the session has ended and where signing in continues to."""

from __future__ import annotations

from django.contrib.sessions.models import Session

from accounts.middleware import SESSION_ENDED


def test_the_accord_left_open_goes_to_sign_in_and_says_why(
    page, make_user, sign_in, check_page, monkeypatch
):
    # The Accord looks for news every POLL_SECONDS (5 s); once a second here,
    # so the test waits one short look, not five seconds of nothing.
    monkeypatch.setattr("commitments.views.accord.POLL_SECONDS", 1)
    user = make_user("me@example.com")
    sign_in(page, user)
    page.goto("/")
    page.get_by_role("heading", name="Accord").first.wait_for()

    Session.objects.all().delete()  # the session ends (expired, signed out elsewhere)

    # The Accord's next look for news finds the session gone.
    page.get_by_text(SESSION_ENDED).wait_for(timeout=20_000)
    assert page.url.startswith(f"{page.live_url}/accounts/login/")
    assert "Sign in to continue to your Accord." in page.locator("main").inner_text()
    assert page.locator("#accord-live").count() == 0  # the sign-in page, not inside the Accord
    check_page(page, "sign-in-session-ended")

    page.get_by_label("Email").fill(user.email)
    page.locator("#id_password").fill("correct horse battery")
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(f"{page.live_url}/")


def test_a_page_opened_after_the_session_ended_says_why(page, make_user, sign_in):
    sign_in(page, make_user("me@example.com"))
    page.goto("/settings/")
    Session.objects.all().delete()

    page.get_by_role("link", name="Notifications").first.click()

    page.get_by_text(SESSION_ENDED).wait_for()
    assert "Sign in to continue to /settings/notifications/" in page.locator("main").inner_text()
