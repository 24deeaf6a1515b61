"""Reads of the conversation (issue 26): the open proposal of one commitment
and of many (one query, whatever their number), the proposals waiting for a
person, the conversation in time order, the deadline history, and the Flow
Score against the deadline both agreed last, Withdrawn ignored."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from audit.services import Actor
from commitments import selectors, selectors_dashboard, services
from commitments.models import Commitment, Status
from tests.harness.commitments import DEADLINE, commitment_in

pytestmark = pytest.mark.django_db

LATER = DEADLINE + dt.timedelta(days=3)
LATEST = DEADLINE + dt.timedelta(days=9)


@pytest.fixture
def lead(assigner):
    return Actor.for_user(assigner)


@pytest.fixture
def knight(assignee):
    return Actor.for_user(assignee)


def test_the_open_proposals_of_many_commitments_take_one_query(
    assigner, assignee, knight, django_assert_num_queries
):
    waiting = [commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee) for _ in range(3)]
    active = commitment_in(Status.ACTIVE, assigner, assignee)
    quiet = commitment_in(Status.ACTIVE, assigner, assignee)
    made = {
        c.pk: services.commitment_propose(
            actor=knight, commitment_id=c.pk, terms_version=1, deadline=LATER
        )
        for c in waiting
    }
    made[active.pk] = services.commitment_extension_request(
        actor=knight, commitment_id=active.pk, deadline=LATER
    )
    ids = [c.pk for c in [*waiting, active, quiet]]

    with django_assert_num_queries(1):
        found = selectors.proposals_open_for(commitment_ids=ids)
        names = {p.proposed_by.name for p in found.values()}  # loaded with it
    assert found == made
    assert names == {"Knight"}

    with django_assert_num_queries(2):  # the rows, and every open proposal at once
        rows = list(selectors.with_open_proposals(Commitment.objects.filter(pk__in=ids)))
        shown = {c.pk: [p.pk for p in c.open_proposals] for c in rows}
    assert shown == {c: ([made[c].pk] if c in made else []) for c in ids}

    with django_assert_num_queries(1):
        waits = selectors.proposals_waiting_for(user=assigner)
        [(p.commitment.description, p.commitment.assignee.name) for p in waits]
    assert [p.pk for p in waits] == [made[c].pk for c in ids if c in made]
    assert selectors.proposals_waiting_for(user=assignee) == []


def test_the_conversation_reads_in_time_order(assigner, assignee, lead, knight):
    c = services.commitment_create_pending(
        actor=lead, assigner=assigner, assignee=assignee, description="Ship", deadline=DEADLINE
    )
    proposal = services.commitment_propose(
        actor=knight, commitment_id=c.pk, terms_version=1, deadline=LATER, note="Friday?"
    )
    services.commitment_comment(actor=lead, commitment_id=c.pk, body="Why Friday?")
    services.commitment_proposal_decline(
        actor=lead, commitment_id=c.pk, proposal_id=proposal.pk, note="No"
    )
    services.commitment_accept(actor=knight, commitment_id=c.pk, terms_version=1)
    services.commitment_comment(actor=knight, commitment_id=c.pk, body="Fine.")
    services.commitment_withdraw(actor=lead, commitment_id=c.pk, reason="Not needed")

    items = selectors.commitment_conversation(commitment=c)

    said = [
        (
            item.kind,
            item.by.name,
            item.event.action if item.event else None,
            item.comment.body if item.comment else None,
        )
        for item in items
    ]
    assert said == [
        ("move", "Lead", "created", None),
        ("proposal", "Knight", None, None),
        ("comment", "Lead", None, "Why Friday?"),
        ("answer", "Lead", None, None),
        ("move", "Knight", "accepted", None),
        ("comment", "Knight", None, "Fine."),
        ("move", "Lead", "withdrawn", None),
    ]
    assert items[1].proposal == items[3].proposal == proposal
    assert items[3].proposal.answer_note == "No"
    assert [item.at for item in items] == sorted(item.at for item in items)


def test_the_conversation_takes_three_queries_whatever_its_length(
    assigner, assignee, lead, knight, django_assert_num_queries
):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    for n in range(10):
        services.commitment_comment(actor=lead, commitment_id=c.pk, body=f"Ping {n}")
    asked = services.commitment_extension_request(actor=knight, commitment_id=c.pk, deadline=LATER)
    services.commitment_extension_grant(actor=lead, commitment_id=c.pk, proposal_id=asked.pk)

    with django_assert_num_queries(3):
        items = selectors.commitment_conversation(commitment=c)
        [(item.by, item.event and item.event.user) for item in items]
    assert [item.kind for item in items].count("comment") == 10


def test_the_deadline_history_lists_the_deadlines_agreed_over_time(
    assigner, assignee, lead, knight, django_assert_num_queries
):
    draft = services.commitment_create_draft(
        actor=lead, assignee=assignee, description="Ship", deadline=DEADLINE - dt.timedelta(1)
    )
    assert selectors.commitment_deadline_history(commitment=draft) == []
    services.commitment_update_draft(actor=lead, commitment_id=draft.pk, deadline=DEADLINE)
    services.commitment_send_for_handshake(actor=lead, commitment_id=draft.pk)
    services.commitment_renegotiate(actor=lead, commitment_id=draft.pk, description="Ship it")
    services.commitment_renegotiate(actor=lead, commitment_id=draft.pk, deadline=LATER)
    proposal = services.commitment_propose(
        actor=knight, commitment_id=draft.pk, terms_version=4, deadline=LATEST
    )
    services.commitment_proposal_accept(actor=lead, commitment_id=draft.pk, proposal_id=proposal.pk)
    furthest = LATEST + dt.timedelta(days=5)
    asked = services.commitment_extension_request(
        actor=knight, commitment_id=draft.pk, deadline=furthest
    )
    services.commitment_extension_grant(actor=lead, commitment_id=draft.pk, proposal_id=asked.pk)
    draft.refresh_from_db()

    with django_assert_num_queries(1):
        history = selectors.commitment_deadline_history(commitment=draft)
        [change.by for change in history]

    assert [(h.how, h.deadline, h.previous, h.by.name) for h in history] == [
        ("asked", DEADLINE, None, "Lead"),  # as sent: the draft's edits before are not agreed
        ("renegotiated", LATER, DEADLINE, "Lead"),  # the description-only one is left out
        ("proposal_accepted", LATEST, LATER, "Lead"),
        ("extension_granted", furthest, LATEST, "Lead"),
    ]


def test_the_flow_score_counts_against_the_deadline_agreed_last(assigner, assignee, lead, knight):
    now = timezone.now()
    c = commitment_in(Status.ACTIVE, assigner, assignee, deadline=now - dt.timedelta(days=1))
    assert selectors.flow_score_parts(user=assignee).overdue == 1
    asked = services.commitment_extension_request(
        actor=knight, commitment_id=c.pk, deadline=now + dt.timedelta(days=2)
    )
    assert selectors.flow_score_parts(user=assignee).overdue == 1  # asked, not yet agreed
    services.commitment_extension_grant(actor=lead, commitment_id=c.pk, proposal_id=asked.pk)
    parts = selectors.flow_score_parts(user=assignee)
    assert (parts.overdue, parts.score) == (0, None)
    services.commitment_complete(actor=knight, commitment_id=c.pk)
    parts = selectors.flow_score_parts(user=assignee)
    assert (parts.kept, parts.completed, parts.score) == (1, 1, 100)  # kept: by the new deadline
    history = selectors_dashboard.flow_score_history(user=assignee, tz=dt.UTC)
    assert history[-1].score == 100


def test_the_flow_score_ignores_withdrawn_commitments(assigner, assignee, lead):
    now = timezone.now()
    late = commitment_in(Status.ACTIVE, assigner, assignee, deadline=now - dt.timedelta(days=3))
    assert selectors.flow_score(user=assignee) == 0
    services.commitment_withdraw(actor=lead, commitment_id=late.pk)

    assert selectors.flow_score_parts(user=assignee).counted == 0
    history = selectors_dashboard.flow_score_history(user=assignee, tz=dt.UTC)
    assert {point.score for point in history} == {None}
    day = (now - dt.timedelta(days=3)).date()
    assert selectors_dashboard.flow_score_day_moves(user=assignee, day=day, tz=dt.UTC) == []
