"""New commitment in a real browser, at phone and desktop size: typing a date
chooses "On this date and time" (it used to leave "No deadline" selected while
the date was used anyway)."""

from __future__ import annotations

from playwright.sync_api import expect

from commitments.models import Commitment


def test_typing_a_date_chooses_on_this_date(page, sign_in, make_user, check_page):
    lead = make_user("lead@example.com", display_name="Lead")
    make_user("knight@example.com", display_name="Knight")
    sign_in(page, lead)
    page.goto("/commitments/new")
    expect(page.get_by_label("No deadline")).to_be_checked()

    page.get_by_label("Who (e-mail address)").fill("knight@example.com")
    page.get_by_label("What").fill("Polish the shield")
    page.get_by_label("Date and time", exact=True).fill("2030-03-01T17:00")

    expect(page.get_by_label("On this date and time:")).to_be_checked()
    expect(page.get_by_label("No deadline")).not_to_be_checked()
    check_page(page, "new-commitment-date-typed")
    page.get_by_role("button", name="Send for handshake").click()
    expect(page.get_by_text("Knight is asked for the handshake.")).to_be_visible()
    assert Commitment.objects.get().deadline.isoformat() == "2030-03-01T17:00:00+00:00"
