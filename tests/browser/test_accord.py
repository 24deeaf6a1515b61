"""The Accord and the New commitment page in a real browser, at phone and
desktop size: an inbox call shows up in an open Accord without a reload;
accept and complete from the list; ask someone new and see the invitation."""

from __future__ import annotations

import json
import re

import pytest
from django.core import mail
from playwright.sync_api import expect

from audit.services import Actor
from commitments import services
from commitments.models import Commitment, EventKind, OutboxEvent, Status
from notifications.sending import nudge_send
from relay import outbox
from tests.harness.api import INBOX, inbox_body, mint


@pytest.fixture
def lead(make_user):
    return make_user("lead@example.com", display_name="Lead")


@pytest.fixture
def knight(make_user):
    return make_user("knight@example.com", display_name="Knight")


def row(page, description: str):
    return page.locator("tr", has_text=description)


def test_an_inbox_call_appears_in_an_open_accord_without_a_reload(
    page, sign_in, lead, knight, check_page, monkeypatch
):
    # The script looks every POLL_SECONDS (5 s); once a second here, so the
    # test waits for a look, not for five seconds of nothing.
    monkeypatch.setattr("commitments.views.accord.POLL_SECONDS", 1)
    token = mint(lead)
    sign_in(page, knight)
    page.goto("/")
    expect(page.get_by_text("Nothing waiting for you.")).to_be_visible()
    page.evaluate("window.stillTheSamePage = true")

    response = page.request.post(
        f"{page.live_url}{INBOX}",
        data=json.dumps(inbox_body(description="Review the budget for Q3")),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert response.status == 201, response.text()

    # Generous: a few looks on a busy machine.
    expect(row(page, "Review the budget for Q3")).to_be_visible(timeout=12_000)
    assert page.evaluate("window.stillTheSamePage") is True
    expect(row(page, "Review the budget for Q3").get_by_text("new", exact=True)).to_be_visible()
    expect(page.locator("#accord-count")).to_have_text(re.compile(r":\s*1$"))
    check_page(page, "accord-live")


def test_accept_then_complete_from_the_list(page, sign_in, lead, knight, check_page):
    for n in range(3):
        services.commitment_create_pending(
            actor=Actor.for_user(lead),
            assigner=lead,
            assignee=knight,
            description=f"Polish the shield number {n}",
            deadline=None,
        )
    sign_in(page, knight)
    page.goto("/")
    check_page(page, "accord-waiting")

    row(page, "Polish the shield number 1").get_by_role("button", name="Accept").click()

    expect(page.locator("#accord-active")).to_be_visible()
    expect(page.locator("#accord-active").locator("..")).to_contain_text(
        "Polish the shield number 1"
    )
    assert page.url.rstrip("/") == page.live_url
    check_page(page, "accord-accepted")

    row(page, "Polish the shield number 1").get_by_role("button", name="Complete").click()

    expect(page.locator("#accord-completed")).to_be_visible()
    done = Commitment.objects.get(description="Polish the shield number 1")
    assert done.status == Status.COMPLETED
    assert Commitment.objects.filter(status=Status.PENDING_HANDSHAKE).count() == 2


def test_decline_with_a_reason_from_the_list(page, sign_in, lead, knight):
    c = services.commitment_create_pending(
        actor=Actor.for_user(lead),
        assigner=lead,
        assignee=knight,
        description="Slay the rabbit",
        deadline=None,
    )
    sign_in(page, knight)
    page.goto("/")

    the_row = row(page, "Slay the rabbit")
    the_row.locator("summary").click()
    the_row.get_by_label("Reason (optional)").fill("Too dangerous")
    the_row.get_by_role("button", name="Decline", exact=True).click()

    expect(page.locator("#accord-declined")).to_be_visible()
    c.refresh_from_db()
    assert c.status == Status.REFUSED


def test_ask_someone_new_and_the_invitation_goes_out(page, sign_in, lead, settings, check_page):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []
    sign_in(page, lead)
    page.goto("/")
    page.navigate("New commitment")
    expect(page.get_by_role("heading", name="New commitment")).to_be_visible()
    check_page(page, "new-commitment")

    page.get_by_label("Who (e-mail address)").fill("newcomer@example.com")
    page.get_by_label("What").fill("Bring a shrubbery")
    page.get_by_label("End of week (Sunday)").check()
    page.get_by_role("button", name="Send for handshake").click()

    expect(page.get_by_text("newcomer@example.com has no account yet")).to_be_visible()
    c = Commitment.objects.get(description="Bring a shrubbery")
    assert c.assignee is None and c.invitation.email == "newcomer@example.com"
    assert c.deadline is not None
    event = OutboxEvent.objects.get(commitment=c)
    assert event.kind == EventKind.INVITED
    # What the worker does with the outbox row (tests/notifications covers a real one).
    (delivery_id,) = outbox.outbox_event_dispatch(event_id=event.pk)
    nudge_send(delivery_id=delivery_id)
    (invitation,) = mail.outbox
    assert invitation.to == ["newcomer@example.com"]
    assert "sign up with this address" in invitation.body


def test_a_past_deadline_is_confirmed_first(page, sign_in, lead, knight, check_page):
    sign_in(page, lead)
    page.goto("/commitments/new")
    page.get_by_label("Who (e-mail address)").fill("knight@example.com")
    page.get_by_label("What").fill("Yesterday's errand")
    page.get_by_label("Date and time", exact=True).fill("2020-01-01T10:00")
    page.get_by_label("On this date and time:").check()
    page.get_by_role("button", name="Send for handshake").click()

    expect(page.get_by_text("The deadline is already past.")).to_be_visible()
    check_page(page, "new-commitment-past-deadline")
    assert not Commitment.objects.exists()

    page.get_by_label("Yes, ask with this deadline in the past").check()
    page.get_by_role("button", name="Send for handshake").click()

    expect(page.get_by_text("Knight is asked for the handshake.")).to_be_visible()
    assert Commitment.objects.get().status == Status.PENDING_HANDSHAKE
