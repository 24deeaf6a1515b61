"""Settings, Notifications: each kind of news at once, in the daily digest or
not at all (issue 26: 10), chosen and saved at phone and desktop size,
axe clean, no horizontal overflow; and saved by a browser with JavaScript
off (the form is a plain POST)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_each_kind_of_news_is_chosen_and_saved(page, sign_in, make_user, check_page):
    ada = make_user("ada@example.com")
    sign_in(page, ada)
    page.goto("/settings/notifications/")
    for group in ("Asked of me", "Answered", "Commented", "Reminders"):
        radios = page.get_by_role("group", name=group).get_by_role("radio")
        assert radios.count() == 3
        assert (
            page.get_by_role("group", name=group).get_by_role("radio", name="At once").is_checked()
        )
    check_page(page, "settings-notifications-news")

    page.get_by_role("group", name="Commented").get_by_role(
        "radio", name="In the daily digest"
    ).check()
    page.get_by_role("group", name="Answered").get_by_role("radio", name="Not at all").check()
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved.").wait_for()

    ada.nudge_channel.refresh_from_db()
    assert (ada.nudge_channel.news_commented, ada.nudge_channel.news_answered) == (
        "digest",
        "off",
    )
    assert (
        page.get_by_role("group", name="Commented")
        .get_by_role("radio", name="In the daily digest")
        .is_checked()
    )
    check_page(page, "settings-notifications-news-saved")


def test_the_choices_save_without_javascript(browser, live_server, sign_in, make_user):
    from tests.harness.browser import BrowserPage

    ada = make_user("ada@example.com")
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    try:
        page = BrowserPage(
            context.new_page(), viewport="phone", live_url=live_server.url, js_errors=[]
        )
        sign_in(page, ada)
        page.goto("/settings/notifications/")
        page.get_by_role("group", name="Reminders").get_by_role("radio", name="Not at all").check()
        page.get_by_role("button", name="Save").click()
        page.get_by_text("Saved.").wait_for()
    finally:
        context.close()
    ada.nudge_channel.refresh_from_db()
    assert ada.nudge_channel.news_reminders == "off"
