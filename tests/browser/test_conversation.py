"""The conversation around a commitment in a real browser (issue 26), as both
people, at phone and desktop size, each page checked (overflow, axe-core,
screenshot): propose -> accept -> Active on the new deadline (answered from
the asker's live Accord); propose -> decline -> the terms asked wait again;
more time asked -> granted (from the dashboard) -> the Flow Score counts the
new deadline; a comment -> the other person's nudge (its outbox row); withdraw;
reassign to someone with an account and to an address with none."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from audit.services import Actor
from commitments import services
from commitments.models import (
    Commitment,
    EventKind,
    Invitation,
    OutboxEvent,
    Proposal,
    ProposalState,
    Status,
)

TUESDAY = dt.datetime(2030, 1, 1, 9, 0, tzinfo=dt.UTC)
FRIDAY = dt.datetime(2030, 1, 4, 17, 0, tzinfo=dt.UTC)


@pytest.fixture
def lead(make_user):
    return make_user("lead@example.com", display_name="Lead")


@pytest.fixture
def knight(make_user):
    return make_user("knight@example.com", display_name="Knight")


def asked(lead, knight, description: str, *, deadline=TUESDAY, accept=False) -> Commitment:
    c = services.commitment_create_pending(
        actor=Actor.for_user(lead),
        assigner=lead,
        assignee=knight,
        description=description,
        deadline=deadline,
    )
    if accept:
        services.commitment_accept(actor=Actor.for_user(knight), commitment_id=c.pk)
    c.refresh_from_db()
    return c


def open_move(page, summary: str) -> None:
    """Unfolds a move's <details> (no script: the browser does it)."""
    page.locator("summary", has_text=summary).first.click()


def propose_friday(page, c: Commitment, note: str) -> None:
    page.goto(f"/commitments/{c.pk}")
    open_move(page, "Propose other terms")
    page.get_by_label("Deadline you propose").fill("2030-01-04T17:00")
    page.get_by_label("Note (optional)").fill(note)
    page.get_by_role("button", name="Send the proposal").click()
    page.wait_for_url(f"**/commitments/{c.pk}")
    expect(page.locator(".messages")).to_contain_text("Proposed: Lead is asked")


def test_propose_then_accept_from_the_live_accord_activates_on_the_new_deadline(
    page, sign_in, check_page, lead, knight
):
    c = asked(lead, knight, "Shoe the horses")

    # The assignee proposes Friday instead of Tuesday.
    sign_in(page, knight)
    page.goto(f"/commitments/{c.pk}")
    open_move(page, "Propose other terms")
    check_page(page, "propose-form")
    propose_friday(page, c, "Friday, not Tuesday: the smith is away")
    expect(page.locator(".open-proposal")).to_contain_text(
        "Waiting for Lead\N{RIGHT SINGLE QUOTATION MARK}s answer."
    )
    check_page(page, "proposal-waiting-assignee")
    page.goto("/")
    expect(page.locator(f"#c-{c.pk}")).to_contain_text("You proposed other terms")

    # The asker's Accord, open, shows it without a reload, answered in the list.
    sign_in(page, lead)
    page.goto("/")
    answers = page.locator("#accord-answers").locator("..")
    expect(answers).to_contain_text("Shoe the horses")
    page.evaluate("window.stillTheSamePage = true")
    other = asked(lead, knight, "Polish the armour")
    services.commitment_propose(
        actor=Actor.for_user(knight),
        commitment_id=other.pk,
        terms_version=other.terms_version,
        deadline=FRIDAY,
    )
    expect(answers).to_contain_text("Polish the armour", timeout=12_000)
    assert page.evaluate("window.stillTheSamePage") is True
    row = answers.locator("tr", has_text="Shoe the horses")
    expect(row).to_contain_text("Knight proposes Fri 4 Jan, 17:00")
    check_page(page, "accord-answers")
    row.get_by_role("button", name="Accept").click()
    expect(page.locator(".messages")).to_contain_text("Accepted the proposal")
    assert page.url.rstrip("/") == page.live_url

    c.refresh_from_db()
    assert (c.status, c.deadline) == (Status.ACTIVE, FRIDAY)
    page.goto(f"/commitments/{c.pk}")
    expect(page.locator(".badge.status-active").first).to_be_visible()
    expect(page.locator(".facts").first).to_contain_text("4 Jan 2030, 17:00")
    expect(page.locator(".timeline")).to_contain_text("Accepted the proposal by you")
    expect(page.locator(".deadline-history")).to_contain_text("Proposal accepted")
    check_page(page, "proposal-accepted-assigner")

    sign_in(page, knight)
    page.goto(f"/commitments/{c.pk}")
    expect(page.locator(".timeline")).to_contain_text("Accepted the proposal by Lead")
    expect(page.locator(".timeline")).to_contain_text("Friday, not Tuesday")
    check_page(page, "proposal-accepted-assignee")


def test_propose_then_decline_leaves_the_terms_asked_waiting(
    page, sign_in, check_page, lead, knight
):
    c = asked(lead, knight, "Mend the banner")
    sign_in(page, knight)
    propose_friday(page, c, "Friday suits better")

    sign_in(page, lead)
    page.goto(f"/commitments/{c.pk}")
    proposal = page.locator(".open-proposal")
    expect(proposal).to_contain_text("Knight proposes other terms")
    expect(proposal).to_contain_text("4 Jan 2030, 17:00")
    check_page(page, "proposal-to-answer")
    proposal.locator("summary", has_text="Decline the proposal").click()
    proposal.get_by_label("Note (optional)").fill("Tuesday, please: the king arrives")
    proposal.get_by_role("button", name="Decline", exact=True).click()
    expect(page.locator(".messages")).to_contain_text("Declined the proposal")

    c.refresh_from_db()
    assert (c.status, c.deadline) == (Status.PENDING_HANDSHAKE, TUESDAY)
    sign_in(page, knight)
    page.goto(f"/commitments/{c.pk}")
    expect(page.locator(".timeline")).to_contain_text("Declined the proposal by Lead")
    expect(page.locator(".timeline")).to_contain_text("Tuesday, please: the king arrives")
    expect(page.get_by_role("button", name="Accept", exact=True)).to_be_visible()
    expect(page.locator(".facts").first).to_contain_text("1 Jan 2030, 09:00")
    check_page(page, "proposal-declined-assignee")


def test_more_time_granted_from_the_dashboard_moves_the_flow_score(
    page, sign_in, check_page, lead, knight
):
    passed = timezone.now() - dt.timedelta(days=1)
    c = asked(lead, knight, "Train the squires", deadline=passed, accept=True)

    sign_in(page, knight)
    page.goto("/dashboard/")
    expect(page.locator("#flow-parts")).to_have_text("0 of 1 kept, 1 overdue")
    page.goto(f"/commitments/{c.pk}")
    open_move(page, "Ask for more time")
    expect(page.locator("#extension-late")).to_contain_text("The deadline passed on")
    check_page(page, "more-time-form")
    new_deadline = timezone.localtime(timezone.now() + dt.timedelta(days=3), dt.UTC)
    page.get_by_label("New deadline").fill(new_deadline.strftime("%Y-%m-%dT%H:%M"))
    page.get_by_label("Note (optional)").fill("The rain stopped all training")
    page.get_by_role("button", name="Ask for more time").click()
    expect(page.locator(".messages")).to_contain_text("Asked for more time")
    expect(page.locator(".open-proposal")).to_contain_text("asked after the deadline")

    sign_in(page, lead)
    page.goto("/dashboard/")
    attention = page.locator("#attention")
    expect(attention).to_contain_text("Knight asks for more time")
    check_page(page, "dashboard-answers")
    attention.get_by_role("button", name="Grant more time on “Train the squires”").click()
    expect(page.locator(".messages")).to_contain_text("More time granted")
    c.refresh_from_db()
    assert c.status == Status.ACTIVE and c.deadline > timezone.now()
    expect(page.locator(".deadline-history")).to_contain_text("More time granted")

    # No longer overdue: nothing counts; completed now, it was kept.
    sign_in(page, knight)
    page.goto("/dashboard/")
    expect(page.locator("#flow")).to_contain_text("No score yet")
    page.goto(f"/commitments/{c.pk}/complete/confirm")
    page.get_by_role("button", name="Mark completed").click()
    page.goto("/dashboard/")
    expect(page.locator("#flow-parts")).to_have_text("1 of 1 kept")
    check_page(page, "dashboard-after-more-time")


def test_a_comment_is_shown_safely_and_nudges_the_other_person(
    page, sign_in, check_page, lead, knight
):
    c = asked(lead, knight, "Count the arrows", accept=True)

    sign_in(page, knight)
    page.goto(f"/commitments/{c.pk}")
    page.get_by_label("Comment").fill("<b>Half</b> done\nThe rest by noon")
    page.get_by_role("button", name="Comment", exact=True).click()
    expect(page.locator(".messages")).to_contain_text("Comment added.")
    nudge = OutboxEvent.objects.filter(commitment=c, kind=EventKind.COMMENTED).get()
    assert nudge.actor_user_id == knight.pk and "commentId" in nudge.detail

    sign_in(page, lead)
    page.goto(f"/commitments/{c.pk}")
    body = page.locator(".comment-body")
    expect(body).to_be_visible()
    assert body.inner_text() == "<b>Half</b> done\nThe rest by noon"  # escaped, its line kept
    assert body.locator("b").count() == 0 and body.locator("br").count() == 1
    page.get_by_label("Comment").fill("Thank you")
    page.get_by_role("button", name="Comment", exact=True).click()
    expect(page.locator(".comment-body")).to_have_count(2)
    check_page(page, "conversation-comments")
    kinds = OutboxEvent.objects.filter(commitment=c, kind=EventKind.COMMENTED)
    assert [e.actor_user_id for e in kinds.order_by("id")] == [knight.pk, lead.pk]


def test_withdrawing_asks_to_confirm_and_the_assignee_sees_it_withdrawn(
    page, sign_in, check_page, lead, knight
):
    c = asked(lead, knight, "Guard the east gate", accept=True)

    sign_in(page, lead)
    page.goto(f"/commitments/{c.pk}")
    page.get_by_role("link", name="Withdraw…").click()
    page.wait_for_url(f"**/commitments/{c.pk}/withdraw/confirm")
    check_page(page, "withdraw-confirm")
    page.get_by_label("Reason (optional)").fill("The gate was walled up")
    page.get_by_role("button", name="Withdraw").click()
    expect(page.locator(".messages")).to_contain_text("Withdrawn")
    c.refresh_from_db()
    assert c.status == Status.WITHDRAWN

    sign_in(page, knight)
    page.goto("/")
    expect(page.locator("#accord-withdrawn").locator("..")).to_contain_text("Guard the east gate")
    check_page(page, "accord-withdrawn")
    page.goto(f"/commitments/{c.pk}")
    expect(page.locator(".timeline")).to_contain_text("Reason: The gate was walled up")
    assert page.locator("summary", has_text="Ask for more time").count() == 0
    check_page(page, "withdrawn-assignee")


def test_reassigning_to_someone_else_and_to_an_address_with_no_account(
    page, sign_in, check_page, lead, knight, make_user
):
    squire = make_user("squire@example.com", display_name="Squire")
    c = asked(lead, knight, "Carry the standard", accept=True)
    other = asked(lead, knight, "Sound the horn")

    sign_in(page, lead)
    page.goto(f"/commitments/{c.pk}")
    open_move(page, "Reassign")
    page.get_by_label("Hand it to (e-mail address)").fill("squire@example.com")
    page.get_by_label("Note (optional)").fill("Knight rides north")
    check_page(page, "reassign-form")
    page.get_by_role("button", name="Reassign").click()
    expect(page.locator(".messages")).to_contain_text(
        "Reassigned: Knight is told and released; Squire is asked for the handshake."
    )
    c.refresh_from_db()
    assert (c.assignee, c.status) == (squire, Status.PENDING_HANDSHAKE)

    page.goto(f"/commitments/{other.pk}")
    open_move(page, "Reassign")
    page.get_by_label("Hand it to (e-mail address)").fill("newcomer@example.com")
    page.get_by_role("button", name="Reassign").click()
    expect(page.locator(".messages")).to_contain_text(
        "newcomer@example.com has no account yet: they are invited by e-mail"
    )
    expect(page.locator(".facts").first).to_contain_text("invited: no account yet")
    check_page(page, "reassigned-invited")
    other.refresh_from_db()
    assert other.assignee is None
    assert Invitation.objects.get(pk=other.invitation_id).email == "newcomer@example.com"
    event = OutboxEvent.objects.filter(commitment=other, kind=EventKind.REASSIGNED).get()
    assert event.detail["previousAssigneeId"] == str(knight.pk)

    sign_in(page, squire)
    page.goto("/")
    expect(page.locator("#accord-waiting").locator("..")).to_contain_text("Carry the standard")
    check_page(page, "accord-reassigned")

    sign_in(page, knight)
    page.goto("/")
    expect(page.get_by_text("Carry the standard")).to_have_count(0)
    response = page.goto(f"/commitments/{c.pk}")
    assert response is not None and response.status == 404


def test_an_answer_that_lost_the_race_is_told_in_the_page(page, sign_in, lead, knight):
    c = asked(lead, knight, "Saddle the mare")
    sign_in(page, knight)
    propose_friday(page, c, "Later")

    sign_in(page, lead)
    page.goto(f"/commitments/{c.pk}")
    proposal = Proposal.objects.get(commitment=c)
    # Another tab answered first.
    services.commitment_proposal_decline(
        actor=Actor.for_user(lead), commitment_id=c.pk, proposal_id=proposal.pk
    )
    page.get_by_role("button", name="Accept the proposal").click()
    expect(page.get_by_role("alert")).to_contain_text("this proposal was answered already")
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.DECLINED
