"""Reads of the conversation (issue 26): the Flow Score against the deadline
both agreed last, Withdrawn ignored. (The conversation and the deadlines'
history as the page reads them: tests/commitments/test_conversation_pages.py.)"""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from audit.services import Actor
from commitments import selectors, selectors_dashboard, services
from commitments.models import Status
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
