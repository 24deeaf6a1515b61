"""Answering from the nudge in a real browser, at phone and desktop size, each
page checked (overflow, axe-core, screenshot): the Accept link of a real
handshake-request mail, opened signed out, goes through sign-in and back to
the confirmation page, which changed nothing until its button is pressed; a
link for terms that changed since is refused and shows the current terms; a
link opened by someone else is refused; and the page works without
JavaScript (a proposal of another date)."""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlsplit

import pytest

from audit.services import Actor
from commitments import services
from commitments.models import Commitment, EventKind, OutboxEvent, Proposal, Status
from notifications.models import AttemptOutcome
from notifications.sending import nudge_send
from relay import outbox
from tests.harness.browser import BrowserPage
from tests.harness.commitments import snapshot
from tests.harness.verification import LINK, mails_to

DEADLINE = dt.datetime(2030, 1, 10, 17, 0, tzinfo=dt.UTC)


@pytest.fixture
def lead(make_user):
    return make_user("lead@example.com", display_name="Lead")


@pytest.fixture
def knight(make_user):
    return make_user("knight@example.com", display_name="Knight")


def ask(lead, knight) -> Commitment:
    return services.commitment_create_pending(
        actor=Actor.for_user(lead),
        assigner=lead,
        assignee=knight,
        description="Find a shrubbery",
        deadline=DEADLINE,
    )


def nudge(c: Commitment, kind: str = EventKind.HANDSHAKE_REQUESTED) -> None:
    """What the worker does with the outbox row (tests/relay covers a real one)."""
    event = OutboxEvent.objects.filter(commitment=c, kind=kind).latest("pk")
    for delivery_id in outbox.outbox_event_dispatch(event_id=event.pk):
        assert nudge_send(delivery_id=delivery_id) == AttemptOutcome.DELIVERED


def mailed_link(mailbox, address: str, words: str) -> str:
    """The link under `words` in the last mail to `address`, as a path."""
    body = mails_to(mailbox, address)[-1].body
    after = body[body.index(f"\n{words}:\n") :]
    found = LINK.search(after)
    assert found is not None, f"no link under {words!r} in:\n{body}"
    return urlsplit(found.group(0)).path


def test_accept_from_the_mails_link_signed_out_sign_in_confirm_active(
    page, mailbox, check_page, lead, knight
):
    c = ask(lead, knight)
    nudge(c)
    accept = mailed_link(mailbox, knight.email, "Accept")
    before = snapshot(c)

    page.goto(accept)  # signed out: to sign in first

    page.wait_for_url("**/accounts/login/**")
    check_page(page, "answer-sign-in")
    page.get_by_label("Email").fill(knight.email)
    page.locator("#id_password").fill("correct horse battery")
    page.get_by_role("button", name="Sign in", exact=True).click()

    page.wait_for_url(f"**{accept}")
    assert page.get_by_role("heading", level=1).inner_text() == "Accept this request?"
    assert "Find a shrubbery" in page.locator("main").inner_text()
    check_page(page, "answer-accept")
    assert snapshot(c) == before  # opening the link, and signing in, answered nothing

    page.get_by_role("button", name="Accept", exact=True).click()

    page.wait_for_url(f"**/commitments/{c.pk}")
    assert "Accepted: the commitment is now active." in page.locator(".messages").inner_text()
    check_page(page, "answer-accepted")
    c.refresh_from_db()
    assert c.status == Status.ACTIVE


def test_a_link_for_changed_terms_is_refused_and_shows_the_current_ones(
    page, mailbox, sign_in, check_page, lead, knight
):
    c = ask(lead, knight)
    nudge(c)
    old_accept = mailed_link(mailbox, knight.email, "Accept")
    services.commitment_renegotiate(
        actor=Actor.for_user(lead), commitment_id=c.pk, deadline=DEADLINE + dt.timedelta(days=7)
    )
    sign_in(page, knight)
    before = snapshot(c)

    response = page.goto(old_accept)

    assert response.status == 409
    assert page.get_by_role("heading", level=1).inner_text() == "The terms changed"
    main = page.locator("main").inner_text()
    assert "Lead changed the terms after this link was sent to you" in main
    assert "17 Jan 2030" in main  # the current deadline
    assert page.get_by_role("button", name="Accept").count() == 0
    check_page(page, "answer-terms-changed")
    assert snapshot(c) == before

    page.get_by_role("link", name="Open the commitment").click()
    page.wait_for_url(f"**/commitments/{c.pk}")
    assert c.status == Status.PENDING_HANDSHAKE


def test_a_link_opened_by_someone_else_is_refused(page, mailbox, sign_in, check_page, lead, knight):
    c = ask(lead, knight)
    nudge(c)
    accept = mailed_link(mailbox, knight.email, "Accept")
    sign_in(page, lead)  # the asker, say, from a forwarded mail
    before = snapshot(c)

    response = page.goto(accept)

    assert response.status == 403
    assert page.get_by_role("heading", level=1).inner_text() == "This link was sent to someone else"
    check_page(page, "answer-someone-else")
    assert snapshot(c) == before

    # Sign out, sign in as the one it was sent to, and come back to it.
    page.get_by_role("button", name="Sign out and sign in as someone else").click()
    page.wait_for_url("**/accounts/login/**")
    page.get_by_label("Email").fill(knight.email)
    page.locator("#id_password").fill("correct horse battery")
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(f"**{accept}")
    assert page.get_by_role("heading", level=1).inner_text() == "Accept this request?"


def test_propose_another_date_without_javascript(
    page, browser, mailbox, sign_in, check_page, lead, knight
):
    c = ask(lead, knight)
    nudge(c)
    propose = mailed_link(mailbox, knight.email, "Propose another date")
    decline = mailed_link(mailbox, knight.email, "Decline")
    # The pages as a browser with scripts shows them: checked (axe-core needs a script).
    sign_in(page, knight)
    page.goto(propose)
    check_page(page, "answer-propose")
    page.goto(decline)
    page.get_by_text("Answer otherwise").click()
    check_page(page, "answer-decline-others-open")

    context = browser.new_context(
        base_url=page.live_url,
        viewport=page.viewport_size,
        locale="en-GB",
        timezone_id="UTC",
        java_script_enabled=False,
    )
    context.set_default_timeout(30_000)
    try:
        plain = BrowserPage(context.new_page(), viewport=page.viewport, live_url=page.live_url)
        sign_in(plain, knight)

        # The other answers are behind "Answer otherwise", which opens without a script.
        plain.goto(decline)
        assert not plain.get_by_role("button", name="Accept", exact=True).is_visible()
        plain.get_by_text("Answer otherwise").click()
        assert plain.get_by_role("button", name="Accept", exact=True).is_visible()

        plain.goto(propose)
        assert plain.get_by_role("heading", level=1).inner_text() == "Propose another date?"
        plain.get_by_label("New deadline").fill("2030-01-17T17:00")
        plain.get_by_label("Note (optional)").fill("The knights who say Ni need a week")
        plain.get_by_role("button", name="Propose this date").click()

        plain.wait_for_url(f"**/commitments/{c.pk}")
        assert "Proposed: Lead is asked" in plain.locator(".messages").inner_text()
        (proposal,) = Proposal.objects.filter(commitment=c)
        assert proposal.deadline == DEADLINE + dt.timedelta(days=7)
        assert proposal.note == "The knights who say Ni need a week"
        c.refresh_from_db()
        assert c.status == Status.PENDING_HANDSHAKE
    finally:
        context.close()
