"""Whose turn it is reads what waits for a turn, not what waits for a retry.

A receiver that is down leaves its deliveries pending until their next
attempt: thousands, for a busy integrator. The turns' reads (`waiting`: due,
never tried, or left `sending` by a dead worker) run after every send of
everyone's; each of them read every pending row and filtered out those
waiting for a retry (15,000 rows, 2.4 ms, in an EXPLAIN ANALYZE on the
benchmark's database; the webhook line's "anyone waiting" took 7.8 ms a call
in its drain). Here, on PostgreSQL,
with the statistics taken before any of it, each read visits a handful of
rows while 3,000 of another person's wait for a retry."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection, transaction
from django.utils import timezone

from tests.harness.plans import plan_of, rows_visited, statements_on
from webhooks import turns
from webhooks.models import WebhookDelivery
from webhooks.services import webhook_endpoint_create

pytestmark = pytest.mark.postgres

BACKLOG = 3_000
TABLE = WebhookDelivery._meta.db_table


def _rows(endpoint, n: int, *, at: dt.datetime, **fields) -> list[WebhookDelivery]:
    return WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            endpoint=endpoint,
            event_name="commitment.completed",
            created_at=at + dt.timedelta(milliseconds=i),
            next_attempt_at=at,
            **fields,
        )
        for i in range(n)
    )


@pytest.fixture
def stage(make_user, receiver):
    """My endpoint with two deliveries waiting for their turn (one due, one
    never tried and not due: left for its turn) and one sent by a worker
    that died; another person's endpoint with 3,000 delivered long ago
    (analysed then) and now 3,000 waiting for a retry."""
    me, other = make_user("me@example.com"), make_user("other@example.com")
    mine, _ = webhook_endpoint_create(user=me, external_system="jira", url=receiver.url)
    theirs, _ = webhook_endpoint_create(user=other, external_system="jira", url=receiver.url)
    long_ago = timezone.now() - dt.timedelta(days=30)
    _rows(theirs, BACKLOG, at=long_ago, status="delivered", first_attempt_at=long_ago)
    with connection.cursor() as cursor:
        cursor.execute(f'ANALYZE "{TABLE}"')
    now = timezone.now()
    _rows(
        theirs,
        BACKLOG,
        at=now - dt.timedelta(minutes=5),
        status="pending",
        first_attempt_at=now - dt.timedelta(minutes=5),
        attempts=1,
    )
    WebhookDelivery.objects.filter(endpoint=theirs, status="pending").update(
        next_attempt_at=now + dt.timedelta(minutes=10)
    )
    due, left = _rows(mine, 2, at=now - dt.timedelta(seconds=10), status="pending")
    WebhookDelivery.objects.filter(pk=left.pk).update(next_attempt_at=now + dt.timedelta(minutes=1))
    (dead,) = _rows(
        mine,
        1,
        at=now - dt.timedelta(seconds=20),
        status="sending",
        first_attempt_at=now - dt.timedelta(seconds=20),
        claimed_until=now - dt.timedelta(seconds=1),
    )
    return {"me": me, "mine": mine, "waiting": {due.pk, left.pk, dead.pk}, "now": now}


def _visits(call) -> list[tuple[str, int]]:
    """Each statement `call` ran on the deliveries, with the rows its plan visited."""
    statements = statements_on(TABLE, call)
    return [(sql, rows_visited(plan_of(sql, analyze=True), TABLE)) for sql in statements]


def _locking(call):
    with transaction.atomic():  # its callers' (the turn lock: SELECT ... FOR UPDATE)
        return call()


def test_the_turns_reads_visit_what_waits_not_the_retry_backlog(stage):
    me, mine, now = stage["me"], stage["mine"], stage["now"]
    # What they answer: my three waiting, none of the other person's.
    assert turns.anyone_waiting(me.pk, now=now)
    assert set(turns.line(me.pk, now=now)) == stage["waiting"]
    assert set(turns.older_waiting({mine.pk}, now=now, besides=[])) == {mine.pk}
    calls = {
        "anyone waiting": lambda: turns.anyone_waiting(me.pk, now=now),
        "line": lambda: turns.line(me.pk, now=now),
        "older waiting": lambda: turns.older_waiting({mine.pk}, now=now, besides=[]),
        "in flight": lambda: _locking(lambda: turns.in_flight_of({me.pk}, now=now, besides=[])),
    }
    for name, call in calls.items():
        for sql, visited in _visits(call):
            assert visited < 100, (name, visited, sql)
