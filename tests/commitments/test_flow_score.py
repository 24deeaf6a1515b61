"""Flow Score: 100 x kept / (completed + overdue) over 90 days, as assignee."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from commitments.models import Commitment, Status
from commitments.selectors import flow_score

pytestmark = pytest.mark.django_db

NOW = timezone.now()


def make(assigner, assignee, status, *, deadline=None, completed_at=None):
    return Commitment.objects.create(
        assigner=assigner,
        assignee=assignee,
        status=status,
        description="Task",
        deadline=deadline,
        completed_at=completed_at,
    )


def test_no_data_means_no_score(assigner, assignee):
    assert flow_score(user=assignee, now=NOW) is None
    make(assigner, assignee, Status.PENDING_HANDSHAKE)
    make(assigner, assignee, Status.ACTIVE, deadline=NOW + dt.timedelta(days=1))
    assert flow_score(user=assignee, now=NOW) is None


def test_it_counts_kept_late_and_overdue(assigner, assignee):
    day = dt.timedelta(days=1)
    # kept: on time, and with no deadline at all
    make(assigner, assignee, Status.COMPLETED, deadline=NOW, completed_at=NOW - day)
    make(assigner, assignee, Status.COMPLETED, deadline=None, completed_at=NOW - day)
    # completed late: counts as completed, not kept
    make(assigner, assignee, Status.COMPLETED, deadline=NOW - 2 * day, completed_at=NOW - day)
    # overdue: active past its deadline
    make(assigner, assignee, Status.ACTIVE, deadline=NOW - day)
    assert flow_score(user=assignee, now=NOW) == 50  # 2 kept / (3 completed + 1 overdue)


def test_only_the_last_90_days_and_only_as_assignee(assigner, assignee):
    old = NOW - dt.timedelta(days=91)
    make(
        assigner, assignee, Status.COMPLETED, deadline=old - dt.timedelta(days=1), completed_at=old
    )
    make(assigner, assignee, Status.COMPLETED, completed_at=NOW)
    # the assigner's own score is untouched by what they asked of others
    assert flow_score(user=assigner, now=NOW) is None
    assert flow_score(user=assignee, now=NOW) == 100


def test_it_is_one_query(assigner, assignee, django_assert_num_queries):
    make(assigner, assignee, Status.COMPLETED, completed_at=NOW)
    with django_assert_num_queries(1):
        flow_score(user=assignee, now=NOW)
