"""Capture in a real browser: paste notes, gather drafts from the model (the
fake provider behind the real SDK, reached by the live server), choose and save."""

from __future__ import annotations

import pytest

from commitments.models import Commitment, Status
from tests.harness.fake_provider import FakeProvider, draft
from tests.harness.gather import give_key

NOTES = (
    "Launch sync, Monday.\n\n"
    "Knight will book the venue for the launch party by Friday.\n\n"
    "Somebody should water the plants."
)


@pytest.fixture
def fake_provider(settings):
    provider = FakeProvider().start()
    settings.OPENAI_BASE_URL = provider.openai_base_url
    settings.ANTHROPIC_BASE_URL = provider.anthropic_base_url
    try:
        yield provider
    finally:
        provider.stop()


def test_capture_gathers_drafts_and_saves_the_chosen_ones(
    page, sign_in, make_user, fake_provider, check_page
):
    lead = make_user("lead@example.com", display_name="Lead")
    make_user("knight@example.com", display_name="Knight")
    give_key(lead)
    fake_provider.answer(
        [
            draft(
                "Book the venue for the launch party",
                "Knight will book the venue for the launch party by Friday.",
                assignee_name="Knight",
                assignee_email="knight@example.com",
                deadline="2030-03-08T17:00:00+00:00",
                deadline_text="by Friday",
            ),
            draft("Water the plants", "Somebody should water the plants.", confidence="low"),
        ]
    )
    sign_in(page, lead)
    page.goto("/capture/")
    page.get_by_label("Text").fill(NOTES)
    page.get_by_role("button", name="Gather drafts").click()

    drafts = page.locator("#draft-list > li")
    drafts.nth(1).wait_for()
    assert drafts.count() == 2
    assert fake_provider.requests and "book the venue" in fake_provider.requests[0].user_text
    check_page(page, "capture-drafts")
    # Knight is nobody's collaborator yet: the page names him, the person types the address.
    drafts.nth(0).get_by_label("Assignee").fill("knight@example.com")
    drafts.nth(1).get_by_label("Save this draft").uncheck()
    page.get_by_role("button", name="Save chosen drafts").click()

    page.get_by_text("Saved 1 draft.").wait_for()
    assert page.url.endswith("/dashboard/#drafts")
    (saved,) = Commitment.objects.all()
    assert saved.description == "Book the venue for the launch party"
    assert saved.status == Status.DRAFT
    assert saved.assignee.email == "knight@example.com"
    check_page(page, "capture-saved")


def test_a_model_that_declines_is_shown_in_its_own_words_and_nothing_is_saved(
    page, sign_in, make_user, fake_provider, check_page
):
    lead = make_user("lead@example.com", display_name="Lead")
    give_key(lead)
    words = "I'm sorry, but I can't help with <b>that</b> request."
    fake_provider.refuse(words)
    sign_in(page, lead)
    page.goto("/capture/")
    page.get_by_label("Text").fill(NOTES)
    page.get_by_role("button", name="Gather drafts").click()

    box = page.locator("#gather-refusal")
    box.wait_for()
    # The model's words, markup shown as text; no drafts, no "nothing found".
    assert page.locator("#gather-refusal-words").inner_text() == words
    assert page.locator("#gather-refusal-words b").count() == 0
    assert page.locator("#draft-list > li").count() == 0
    assert not page.get_by_text("No commitments found").is_visible()
    check_page(page, "capture-refusal")
    assert not Commitment.objects.exists()

    # Gathering again, answered this time: the refusal goes away.
    fake_provider.answer([draft("Water the plants", "Somebody should water the plants.")])
    page.get_by_role("button", name="Gather drafts").click()
    page.locator("#draft-list > li").first.wait_for()
    assert box.is_hidden()
