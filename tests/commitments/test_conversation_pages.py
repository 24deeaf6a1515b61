"""The conversation around a commitment on the pages (docs/pages.md, "The
conversation"): each move's form for the person who may make it, its errors in
the page (stale terms, answered already, not allowed, bad input) with nothing
changed, the conversation and the deadlines' history, the Accord's and the
dashboard's proposals waiting for an answer, and their query budgets at 10
and 1,000 commitments."""

from __future__ import annotations

import datetime as dt
import re
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import Actor
from commitments import selectors, services
from commitments.models import (
    COMMENT_MAX,
    Commitment,
    EventKind,
    OutboxEvent,
    Proposal,
    ProposalState,
    Status,
)
from commitments.views.commitment import _moved_words
from tests.harness.commitments import DEADLINE, commitment_in, many_commitments, snapshot

pytestmark = pytest.mark.django_db

FRIDAY = dt.datetime(2030, 1, 4, 17, 0, tzinfo=dt.UTC)
LATER = dt.datetime(2030, 2, 1, 9, 0, tzinfo=dt.UTC)


def text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def page(client, c: Commitment) -> str:
    response = client.get(f"/commitments/{c.pk}")
    assert response.status_code == 200
    return text(response)


def propose(assignee, c: Commitment, deadline=FRIDAY, **terms) -> Proposal:
    return services.commitment_propose(
        actor=Actor.for_user(assignee),
        commitment_id=c.pk,
        terms_version=c.terms_version,
        deadline=deadline,
        **terms,
    )


def ask_more_time(assignee, c: Commitment, deadline=LATER) -> Proposal:
    return services.commitment_extension_request(
        actor=Actor.for_user(assignee), commitment_id=c.pk, deadline=deadline, note="Snowed in"
    )


def outbox_kinds(c: Commitment) -> list[str]:
    rows = OutboxEvent.objects.filter(commitment=c).order_by("id")
    return list(rows.values_list("kind", flat=True))


# --- offered to the one who may make it ----------------------------------------------


def test_the_assignee_is_offered_to_propose_and_the_assigner_to_withdraw_and_reassign(
    client, assigner, assignee
):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)

    client.force_login(assignee)
    theirs = page(client, c)
    assert "Propose other terms" in theirs
    assert "Withdraw…" not in theirs and "Reassign" not in theirs
    assert 'name="propose-terms_version" value="1"' in theirs
    assert f'action="/commitments/{c.pk}/comment"' in theirs

    client.force_login(assigner)
    mine = page(client, c)
    assert "Propose other terms" not in mine
    assert "Withdraw…" in mine and "<summary>Reassign</summary>" in mine


def test_more_time_is_offered_on_an_active_commitment_and_says_the_deadline_passed(
    client, assigner, assignee
):
    past = timezone.now() - dt.timedelta(days=1)
    c = commitment_in(Status.ACTIVE, assigner, assignee, deadline=past)
    client.force_login(assignee)

    shown = page(client, c)

    assert "<summary>Ask for more time</summary>" in shown
    assert 'id="extension-late"' in shown and "The deadline passed on" in shown
    assert "Propose other terms" not in shown


def test_no_more_time_is_offered_without_a_deadline(client, assigner, assignee):
    c = commitment_in(Status.ACTIVE, assigner, assignee, deadline=None)
    client.force_login(assignee)
    assert "Ask for more time" not in page(client, c)


# --- propose -> accept / decline ----------------------------------------------------------


def test_a_proposal_posted_waits_and_accepting_it_activates_on_its_terms(
    client, assigner, assignee
):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assignee)

    response = client.post(
        f"/commitments/{c.pk}/propose",
        {
            "propose-deadline": "2030-01-04T17:00",
            "propose-note": "Friday, not Tuesday",
            "propose-terms_version": c.terms_version,
        },
    )

    assert response.status_code == 302
    proposal = Proposal.objects.get(commitment=c)
    assert proposal.deadline == FRIDAY and proposal.state == ProposalState.OPEN
    mine = page(client, c)
    assert (
        "Waiting for Lead\N{RIGHT SINGLE QUOTATION MARK}s answer." in mine
        and "Friday, not Tuesday" in mine
    )

    client.force_login(assigner)
    shown = page(client, c)
    assert "Knight</strong> proposes other terms" in shown
    assert "Accept the proposal" in shown
    response = client.post(f"/commitments/{c.pk}/proposal/accept", {"proposal_id": proposal.pk})
    assert response.status_code == 302
    c.refresh_from_db()
    assert (c.status, c.deadline) == (Status.ACTIVE, FRIDAY)
    after = page(client, c)
    assert "Accepted the proposal</strong> by you" in after
    # The deadlines' history: asked, then the proposal accepted.
    history = after[after.index('id="deadlines-heading"') :]
    assert history.index("1 Jan 2030, 00:00") < history.index("4 Jan 2030, 17:00")
    assert "Proposal accepted" in history


def test_declining_a_proposal_leaves_the_terms_asked_waiting(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    proposal = propose(assignee, c)
    client.force_login(assigner)

    response = client.post(
        f"/commitments/{c.pk}/proposal/decline",
        {"proposal_id": proposal.pk, "note": "Tuesday it must be"},
    )

    assert response.status_code == 302
    c.refresh_from_db()
    assert (c.status, c.deadline) == (Status.PENDING_HANDSHAKE, DEADLINE)
    client.force_login(assignee)
    shown = page(client, c)
    assert "Declined the proposal</strong> by Lead" in shown and "Tuesday it must be" in shown
    assert "Propose other terms" in shown  # they may propose again


def test_a_proposal_on_terms_changed_meanwhile_is_not_sent(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    shown_version = c.terms_version
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner),
        commitment_id=c.pk,
        deadline=LATER,
        terms_version=shown_version,
    )
    client.force_login(assignee)
    before = snapshot(c)

    response = client.post(
        f"/commitments/{c.pk}/propose",
        {"propose-deadline": "2030-01-04T17:00", "propose-terms_version": shown_version},
    )

    assert response.status_code == 409
    assert "Your proposal was not sent: Lead changed the terms" in text(response)
    assert snapshot(c) == before


def test_a_second_answer_is_told_the_proposal_was_answered(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    proposal = propose(assignee, c)
    services.commitment_proposal_decline(
        actor=Actor.for_user(assigner), commitment_id=c.pk, proposal_id=proposal.pk
    )
    client.force_login(assigner)
    before = snapshot(c)

    response = client.post(f"/commitments/{c.pk}/proposal/accept", {"proposal_id": proposal.pk})

    assert response.status_code == 409
    assert "this proposal was answered already" in text(response)
    assert snapshot(c) == before


def test_answering_ones_own_proposal_is_not_allowed_and_says_so(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    proposal = propose(assignee, c)
    client.force_login(assignee)
    before = snapshot(c)

    response = client.post(f"/commitments/{c.pk}/proposal/accept", {"proposal_id": proposal.pk})

    assert response.status_code == 403
    assert "Nothing was done. Not allowed to accept a proposal on" in text(response)
    assert snapshot(c) == before


def test_an_empty_proposal_is_a_form_error(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assignee)
    before = snapshot(c)

    response = client.post(
        f"/commitments/{c.pk}/propose", {"propose-terms_version": c.terms_version}
    )

    assert response.status_code == 400
    assert "an empty proposal changes nothing" in text(response)
    assert '<details class="move" open>' in response.content.decode()
    assert snapshot(c) == before


def test_an_outsider_and_the_signed_out_get_nothing(client, assigner, assignee, outsider):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    proposal = propose(assignee, c)
    before = snapshot(c)

    response = client.post(f"/commitments/{c.pk}/proposal/accept", {"proposal_id": proposal.pk})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]

    client.force_login(outsider)
    response = client.post(f"/commitments/{c.pk}/proposal/accept", {"proposal_id": proposal.pk})
    assert response.status_code == 404
    assert snapshot(c) == before


# --- more time ---------------------------------------------------------------------------


def test_more_time_granted_moves_the_deadline_and_keeps_it_active(client, assigner, assignee):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    client.force_login(assignee)

    response = client.post(
        f"/commitments/{c.pk}/more-time",
        {"extension-deadline": "2030-02-01T09:00", "extension-note": "Snowed in"},
    )
    assert response.status_code == 302
    proposal = Proposal.objects.get(commitment=c)

    client.force_login(assigner)
    shown = page(client, c)
    assert "Knight</strong> asks for more time" in shown and "Grant more time" in shown
    response = client.post(f"/commitments/{c.pk}/more-time/grant", {"proposal_id": proposal.pk})
    assert response.status_code == 302
    c.refresh_from_db()
    assert (c.status, c.deadline) == (Status.ACTIVE, LATER)
    assert "More time granted" in page(client, c)


def test_more_time_to_an_earlier_deadline_is_a_form_error(client, assigner, assignee):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    client.force_login(assignee)
    before = snapshot(c)

    response = client.post(
        f"/commitments/{c.pk}/more-time", {"extension-deadline": "2029-12-01T09:00"}
    )

    assert response.status_code == 400
    assert "later than the current one" in text(response)
    assert snapshot(c) == before


def test_declining_more_time_keeps_the_deadline(client, assigner, assignee):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    proposal = ask_more_time(assignee, c)
    client.force_login(assigner)

    response = client.post(
        f"/commitments/{c.pk}/more-time/decline", {"proposal_id": proposal.pk, "note": "No"}
    )

    assert response.status_code == 302
    c.refresh_from_db()
    assert c.deadline == DEADLINE
    assert "Declined more time</strong> by you" in page(client, c)


# --- comments ----------------------------------------------------------------------------


def test_a_comment_is_escaped_keeps_its_lines_and_tells_the_other(client, assigner, assignee):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    client.force_login(assignee)

    response = client.post(
        f"/commitments/{c.pk}/comment", {"comment-body": "<b>Almost</b> there\nTwo days"}
    )

    assert response.status_code == 302
    assert outbox_kinds(c)[-1] == EventKind.COMMENTED
    client.force_login(assigner)
    shown = page(client, c)
    assert "&lt;b&gt;Almost&lt;/b&gt; there<br>Two days" in shown
    assert "<b>Almost</b>" not in shown
    assert "Knight</strong> commented" in shown


def test_a_comment_too_long_or_blank_is_a_form_error(client, assigner, assignee):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    client.force_login(assignee)
    before = snapshot(c)

    long = client.post(f"/commitments/{c.pk}/comment", {"comment-body": "x" * (COMMENT_MAX + 1)})
    blank = client.post(f"/commitments/{c.pk}/comment", {"comment-body": "  "})

    assert (long.status_code, blank.status_code) == (400, 400)
    assert "at most 2000 characters" in text(long)
    assert "This field is required." in text(blank)
    assert snapshot(c) == before


# --- withdraw and reassign ---------------------------------------------------------------


def test_withdrawing_asks_to_confirm_then_withdraws_with_the_reason(client, assigner, assignee):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    client.force_login(assigner)

    confirm = client.get(f"/commitments/{c.pk}/withdraw/confirm")
    assert confirm.status_code == 200
    assert "Withdraw this commitment?" in text(confirm)
    c.refresh_from_db()
    assert c.status == Status.ACTIVE  # asking changed nothing

    response = client.post(f"/commitments/{c.pk}/withdraw", {"reason": "Plans changed"})
    assert response.status_code == 302
    c.refresh_from_db()
    assert c.status == Status.WITHDRAWN
    client.force_login(assignee)
    shown = page(client, c)
    assert "Withdrew it</strong> by Lead" in shown and "Reason: Plans changed" in shown


def test_the_assignee_cannot_withdraw(client, assigner, assignee):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    client.force_login(assignee)
    response = client.get(f"/commitments/{c.pk}/withdraw/confirm")
    assert response.status_code == 302
    assert client.post(f"/commitments/{c.pk}/withdraw").status_code == 403


def test_reassigning_to_an_account_asks_them_and_releases_the_other(
    client, assigner, assignee, make_user
):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    squire = make_user("squire@example.com", display_name="Squire")
    client.force_login(assigner)

    response = client.post(
        f"/commitments/{c.pk}/reassign",
        {"reassign-assignee_email": "squire@example.com", "reassign-note": "Knight is away"},
    )

    assert response.status_code == 302
    c.refresh_from_db()
    assert (c.assignee, c.status) == (squire, Status.PENDING_HANDSHAKE)
    shown = page(client, c)
    assert "Reassigned: Knight is told and released; Squire is asked" in shown
    assert "Note: Knight is away" in shown
    client.force_login(assignee)
    assert client.get(f"/commitments/{c.pk}").status_code == 404


def test_reassigning_to_an_address_with_no_account_invites_it(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assigner)

    response = client.post(
        f"/commitments/{c.pk}/reassign", {"reassign-assignee_email": "new@example.com"}
    )

    assert response.status_code == 302
    c.refresh_from_db()
    assert c.assignee is None and c.invitation.email == "new@example.com"
    assert "new@example.com has no account yet: they are invited" in page(client, c)
    assert "Reassigned it to new@example.com</strong> by you" in page(client, c)


def test_the_conversation_names_each_person_reassigned_to_at_no_query_a_row(
    client, assigner, assignee, make_user
):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    squire = make_user("squire@example.com", display_name="Squire")
    lead = Actor.for_user(assigner)
    client.force_login(assigner)

    def reassign_and_look(email: str) -> tuple[int, str]:
        services.commitment_reassign(actor=lead, commitment_id=c.pk, assignee_email=email)
        with CaptureQueriesContext(connection) as queries:
            shown = page(client, c)
        return len(queries), shown

    once, _ = reassign_and_look("squire@example.com")
    reassign_and_look("new@example.com")
    thrice, shown = reassign_and_look("page@example.com")

    assert thrice == once
    assert "Reassigned it to Squire</strong> by you" in shown
    assert "Reassigned it to new@example.com</strong> by you" in shown
    assert "Reassigned it to page@example.com</strong> by you" in shown
    squire.display_name = "Sir Squire"  # named as they were when asked
    squire.save()
    assert "Reassigned it to Squire</strong> by you" in page(client, c)


def test_the_person_reassigned_to_reads_it_was_reassigned_to_them(
    client, assigner, assignee, make_user
):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    squire = make_user("squire@example.com", display_name="Squire")
    services.commitment_reassign(
        actor=Actor.for_user(assigner), commitment_id=c.pk, assignee_email=squire.email
    )
    client.force_login(squire)
    assert "Reassigned it to you</strong> by Lead" in page(client, c)


def test_a_reassignment_recorded_before_it_named_anyone_names_the_person_still_asked(
    assigner, assignee, make_user
):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    squire = make_user("squire@example.com", display_name="Squire")
    lead = Actor.for_user(assigner)
    for email in ("squire@example.com", "new@example.com"):
        services.commitment_reassign(actor=lead, commitment_id=c.pk, assignee_email=email)
    c = Commitment.objects.select_related("assignee", "invitation").get(pk=c.pk)
    # The audit trail is append-only: the older shape (no assigneeEmail nor
    # assigneeName) as rows written before, read by the page's helper.
    older = [
        SimpleNamespace(
            action=row.action,
            payload={
                k: v for k, v in row.payload.items() if k not in ("assigneeEmail", "assigneeName")
            },
        )
        for row in AuditEvent.objects.filter(action="reassigned").order_by("occurred_at", "pk")
    ]

    words = [_moved_words(row, c, viewer=assigner) for row in older]

    # The first (to Squire, asked no more) reads as before; the last names
    # the address asked now, from the commitment the page shows.
    assert words == ["Reassigned it", "Reassigned it to new@example.com"]
    assert _moved_words(older[0], c, viewer=squire) == "Reassigned it to you"


def test_reassigning_to_oneself_is_a_form_error(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assigner)
    before = snapshot(c)

    response = client.post(
        f"/commitments/{c.pk}/reassign", {"reassign-assignee_email": "lead@example.com"}
    )

    assert response.status_code == 400
    assert "You cannot reassign it to yourself" in text(response)
    assert snapshot(c) == before


# --- the Accord and the dashboard -----------------------------------------------------------


def test_the_accord_shows_a_proposal_as_waiting_for_the_askers_answer(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    proposal = propose(assignee, c)

    client.force_login(assignee)
    theirs = text(client.get("/"))
    assert (
        "You proposed other terms: " in theirs
        and "waiting for Lead\N{RIGHT SINGLE QUOTATION MARK}s answer" in theirs
    )

    client.force_login(assigner)
    mine = text(client.get("/"))
    assert 'id="accord-answers">Waiting for your answer' in mine
    assert "Knight proposes <time" in mine and "Fri 4 Jan, 17:00" in mine
    response = client.post(
        f"/commitments/{c.pk}/proposal/accept", {"proposal_id": proposal.pk, "next": "/"}
    )
    assert response["Location"] == "/"
    assert 'id="accord-answers"' not in text(client.get("/accord/fragment"))


def test_the_dashboard_needs_your_answer_to_a_request_for_more_time(client, assigner, assignee):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    ask_more_time(assignee, c)
    client.force_login(assigner)

    shown = text(client.get("/dashboard/"))

    assert '<h3 id="answers">Waiting for your answer</h3>' in shown
    assert "Knight asks for more time" in shown


# --- queries -----------------------------------------------------------------------------


def _busy(assigner, assignee, n: int) -> Commitment:
    """`n` commitments each way (every section of either Accord has rows), and
    one with a conversation: a proposal declined, one open, three comments."""
    many_commitments(assigner, assignee, n)
    many_commitments(assignee, assigner, n)
    commitment_in(Status.WITHDRAWN, assignee, assigner)
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    lead, knight = Actor.for_user(assigner), Actor.for_user(assignee)
    first = propose(assignee, c)
    services.commitment_proposal_decline(actor=lead, commitment_id=c.pk, proposal_id=first.pk)
    propose(assignee, c, deadline=LATER)
    for who in (lead, knight, lead):
        services.commitment_comment(actor=who, commitment_id=c.pk, body="Hm")
    return c


@pytest.mark.parametrize("n", [10, 1000])
def test_the_page_with_a_conversation_costs_the_same_queries_at_any_size(
    client, assigner, assignee, django_assert_num_queries, n
):
    c = _busy(assigner, assignee, n)
    client.force_login(assigner)
    client.get(f"/commitments/{c.pk}")

    # the page's 6 (tests/commitments/test_commitment_page.py, 5 without an
    # external reference) + the proposals + the comments
    with django_assert_num_queries(5 + 2):
        shown = page(client, c)

    assert shown.count("commented") == 3 and "Accept the proposal" in shown


@pytest.mark.parametrize("n", [10, 1000])
def test_the_accord_with_answers_waiting_costs_the_same_queries_at_any_size(
    client, assigner, assignee, django_assert_num_queries, n
):
    _busy(assigner, assignee, n)
    client.force_login(assigner)
    client.get("/")

    # session, user, the visit (read, write), people, one count of every
    # part, the answers' page, 5 sections' pages, the navigation's count
    with django_assert_num_queries(2 + 2 + 1 + 1 + 1 + 5 + 1):
        shown = text(client.get("/"))
    assert "Knight proposes" in shown

    # session, user, last seen, the counts, the answers' page, 5 sections' pages
    with django_assert_num_queries(2 + 1 + 1 + 1 + 5):
        client.get("/accord/fragment")


@pytest.mark.parametrize("n", [10, 1000])
def test_the_dashboard_with_answers_waiting_costs_the_same_queries_at_any_size(
    client, assigner, assignee, django_assert_num_queries, n
):
    _busy(assigner, assignee, n)
    client.force_login(assigner)
    client.get("/dashboard/")

    # the dashboard's 12 (tests/commitments/test_dashboard.py) + the answers list
    with django_assert_num_queries(12 + 1):
        shown = text(client.get("/dashboard/"))
    assert "Knight proposes other terms" in shown


def test_what_you_asked_filters_the_withdrawn(client, assigner, assignee):
    commitment_in(Status.WITHDRAWN, assigner, assignee)
    commitment_in(Status.ACTIVE, assigner, assignee)
    client.force_login(assigner)

    shown = text(client.get("/dashboard/?status=Withdrawn"))

    asked = shown[shown.index('id="asked"') :]
    assert asked.count('<span class="badge status-withdrawn">Withdrawn</span>') == 1
    assert 'aria-current="true" class="button small primary">Withdrawn</a>' in asked


def test_one_count_of_the_accords_parts_agrees_with_their_rows_under_every_filter(
    assigner, assignee, make_user
):
    other = make_user("other@example.com", display_name="Other")
    for status in Status:
        commitment_in(status, assigner, assignee)  # asked of the assignee
        commitment_in(status, assignee, other)  # the assignee's own asks
    # proposals waiting for the assignee's answer: one from each person
    propose(assigner, commitment_in(Status.PENDING_HANDSHAKE, assignee, assigner))
    ask_more_time(other, commitment_in(Status.ACTIVE, assignee, other))

    for person, words in [(None, ""), (assigner.pk, ""), (other.pk, "REPORT"), (None, "zzz")]:
        counts = selectors.accord_counts(user=assignee, person=person, text=words)

        answers = selectors.answers_waiting_for(user=assignee)
        if person:
            answers = answers.filter(commitment__assignee_id=person)
        if words:
            answers = answers.filter(commitment__description__icontains=words)
        assert counts["answers"] == answers.count()
        for status in Status:
            if status == Status.DRAFT:
                assert status.value not in counts
                continue
            rows = selectors.accord_section(
                user=assignee, statuses=[status], person=person, text=words
            )
            assert counts[status.value] == rows.count(), (person, words, status)
    assert selectors.accord_counts(user=assignee)["answers"] == 2
