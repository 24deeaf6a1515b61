"""The outbox's lookups by event or commitment take those keys' indexes, not
the index of the undispatched events (`outbox_undispatched_idx`), even when
the statistics were taken while nothing waited: under a backlog they had not
seen, each such statement filtered the whole backlog (8,000 buffers a call
in the benchmark's drain; docs/benchmarks.md, "A stage with history, and a
backlog the statistics had not seen"). The relay's look at what is due
keeps that index: it is its purpose."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection, transaction
from django.utils import timezone

from commitments import outbox
from commitments.models import Commitment, OutboxEvent
from tests.harness.commitments import many_commitments
from tests.harness.plans import indexes_used, plan_of, statements_on

pytestmark = pytest.mark.postgres

BACKLOG_INDEX = "outbox_undispatched_idx"


def _plans(call) -> list[tuple[str, set[str]]]:
    """Each statement `call` ran on the outbox's table, with the indexes of its plan."""
    statements = statements_on(OutboxEvent._meta.db_table, call)
    return [(sql, indexes_used(plan_of(sql))) for sql in statements]


@pytest.fixture
def backlog(make_user):
    """3,000 events dispatched long ago, analysed while nothing waited; then
    a backlog of 3,000 undispatched events the statistics never saw, one a
    commitment. Returns the backlog's events."""
    me, other = make_user("me@example.com"), make_user("other@example.com")
    many_commitments(me, other, 6_000)
    commitments = list(Commitment.objects.order_by("id"))
    long_ago = timezone.now() - dt.timedelta(days=30)
    OutboxEvent.objects.bulk_create(
        OutboxEvent(commitment=c, kind="completed", occurred_at=long_ago, dispatched_at=long_ago)
        for c in commitments[:3_000]
    )
    with connection.cursor() as cursor:
        cursor.execute(f'ANALYZE "{OutboxEvent._meta.db_table}"')
    now = timezone.now()
    return OutboxEvent.objects.bulk_create(
        OutboxEvent(commitment=c, kind="activated", occurred_at=now, next_attempt_at=now)
        for c in commitments[3_000:]
    )


def test_the_lookups_by_event_or_commitment_never_read_the_backlogs_index(backlog):
    now = timezone.now()
    some = backlog[:20]
    ids = [event.pk for event in some]
    calls = {
        "claim": lambda: outbox.outbox_events_claim(event_ids=ids, now=now),
        "first undispatched": lambda: outbox.outbox_events_first_undispatched(
            commitment_ids={str(event.commitment_id) for event in backlog[20:40]}
        ),
        "undispatched before": lambda: outbox.outbox_event_undispatched_before(
            event_id=backlog[50].pk, commitment_id=backlog[50].commitment_id
        ),
        "retry later": lambda: outbox.outbox_event_retry_later(event_id=backlog[60].pk, now=now),
        "due again": lambda: outbox.outbox_events_due_again(
            event_ids=[event.pk for event in backlog[70:90]], now=now
        ),
    }
    for name, call in calls.items():
        for sql, indexes in _plans(call):
            assert BACKLOG_INDEX not in indexes, (name, sql, indexes)
            assert indexes, (name, sql, "read without an index")


def test_the_relays_look_at_what_is_due_keeps_the_backlogs_index(backlog):
    now = timezone.now() + dt.timedelta(minutes=1)
    with transaction.atomic():  # its callers' (SELECT ... FOR UPDATE SKIP LOCKED)
        plans = _plans(
            lambda: outbox.outbox_events_take_due(
                now=now,
                grace=dt.timedelta(seconds=5),
                requeue_after=dt.timedelta(seconds=30),
                limit=50,
            )
        )
    look, *after = plans
    assert BACKLOG_INDEX in look[1], look
    # The taken events stamped by their ids.
    assert after
    assert all(BACKLOG_INDEX not in indexes for _, indexes in after), after
