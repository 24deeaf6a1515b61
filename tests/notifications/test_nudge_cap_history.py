"""The nudge cap over a long history: a pair with many nudges counted in the
window. The cap reads the pair's count in the database and the newest
counted times only when the count could reach the cap (at most `cap` of
them), not every time in the window; the decisions are the ones reading
every time gives (`expected`, the rule on the whole history)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import EventKind, OutboxEvent
from lib import jobs
from notifications import dispatch
from notifications.models import (
    ChannelKind,
    DigestReason,
    NudgeDelivery,
    NudgeDeliveryStatus,
)
from relay import outbox

pytestmark = pytest.mark.django_db

HOUR = dt.timedelta(hours=1)
HISTORY = 200


@pytest.fixture(autouse=True)
def _settings(settings, monkeypatch):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.NUDGE_CAP_WINDOW = 3600
    monkeypatch.setattr(jobs, "enqueue", lambda *args, **kwargs: True)


@pytest.fixture
def fetched(monkeypatch) -> list[int]:
    """How many rows of counted times each read of the cap brought back."""
    sizes: list[int] = []
    newest = dispatch._newest

    def spy(*args, **kwargs):
        rows = newest(*args, **kwargs)
        sizes.append(len(rows))
        return rows

    monkeypatch.setattr(dispatch, "_newest", spy)
    return sizes


def request_of(assigner, assignee, n: int) -> OutboxEvent:
    commitment = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description=f"Request number {n}",
        deadline=None,
    )
    return OutboxEvent.objects.get(commitment=commitment, kind=EventKind.HANDSHAKE_REQUESTED)


def history(assigner, assignee, count: int = HISTORY) -> list[dt.datetime]:
    """`count` nudges of the pair already delivered, counted 15 s apart over
    the last hour (the oldest 59 min ago); their counted times, oldest first."""
    event = request_of(assigner, assignee, 0)
    OutboxEvent.objects.filter(pk=event.pk).update(dispatched_at=timezone.now())
    events = OutboxEvent.objects.bulk_create(
        [
            OutboxEvent(
                commitment=event.commitment,
                kind=event.kind,
                new_status=event.new_status,
                actor_kind=event.actor_kind,
                actor_user=assigner,
                dispatched_at=timezone.now(),
            )
            for _ in range(count)
        ]
    )
    start = timezone.now() - dt.timedelta(minutes=59)
    times = [start + dt.timedelta(seconds=15 * n) for n in range(count)]
    NudgeDelivery.objects.bulk_create(
        [
            NudgeDelivery(
                event=e,
                recipient=assignee,
                sender=assigner,
                channel=ChannelKind.EMAIL,
                status=NudgeDeliveryStatus.DELIVERED,
                counted_at=at,
                next_attempt_at=at,
            )
            for e, at in zip(events, times, strict=True)
        ]
    )
    return times


def expected(counted: list[dt.datetime], *, cap: int, now: dt.datetime) -> dt.datetime | None:
    """The rule on the whole history: None (at once) under the cap, else
    when the digest is due."""
    counted = sorted(at for at in counted if at > now - HOUR)
    if len(counted) < cap:
        return None
    return max(now, counted[len(counted) - cap] + HOUR)


def dispatch_batch(events: list[OutboxEvent]) -> list[NudgeDelivery]:
    outbox.outbox_events_dispatch(events=[(event.pk, "") for event in events])
    return [NudgeDelivery.objects.get(event=event) for event in events]


@pytest.mark.parametrize("cap", [3, 1_000_000])
def test_one_decision_reads_the_count_and_at_most_cap_times(assigner, assignee, fetched, cap):
    times = history(assigner, assignee)
    now = timezone.now()
    mine = NudgeDelivery.objects.filter(sender=assigner, recipient=assignee)

    with CaptureQueriesContext(connection) as queries:
        fields = dispatch._under_cap(mine=mine, cap=cap, window=HOUR, now=now)

    assert len(queries) == 2  # the digest waiting, and the tally
    due = expected(times, cap=cap, now=now)
    if due is None:
        assert fields == {"next_attempt_at": now, "enqueued_at": now, "counted_at": now}
        assert fetched == [1]  # the newest, carrying the count of 200
    else:
        assert fields["is_digest"] and fields["next_attempt_at"] == due
        assert due == times[HISTORY - cap] + HOUR
        assert fetched == [cap]


@pytest.mark.parametrize(
    ("cap", "read"),
    [
        (1_000_000, 1),  # far out of reach: the count alone (on the newest row)
        (HISTORY + 4, 1),  # 200 and the batch's 3 stay under it
        (HISTORY + 2, HISTORY),  # the batch reaches it: every time (fewer than the cap)
        (3, 3),  # over it already: the newest three
    ],
)
def test_a_batch_decides_as_the_whole_history_says_reading_at_most_cap_times(
    assigner, assignee, settings, fetched, cap, read
):
    settings.NUDGE_CAP = cap
    times = history(assigner, assignee)
    events = [request_of(assigner, assignee, n) for n in range(1, 4)]

    with CaptureQueriesContext(connection) as queries:
        made = dispatch_batch(events)

    assert fetched == [read]
    assert read <= cap
    # The same statements whatever the history and the cap.
    assert len([q for q in queries if "tally_rank" in q["sql"]]) == 1
    # The rule, nudge after nudge, on every counted time.
    counted = list(times)
    waiting = None
    for delivery in made:
        now = delivery.created_at
        if waiting is not None:
            assert delivery.status == NudgeDeliveryStatus.HELD
            assert delivery.digest_id == waiting.pk
            continue
        due = expected(counted, cap=cap, now=now)
        if due is None:
            assert not delivery.is_digest
            assert delivery.enqueued_at is not None
        else:
            assert delivery.is_digest and delivery.digest_reason == DigestReason.CAP
            assert delivery.next_attempt_at == due
            waiting = delivery
        counted.append(delivery.counted_at)


def test_a_long_history_costs_the_batch_no_more_statements(assigner, assignee, make_user, settings):
    settings.NUDGE_CAP = 1_000_000
    other = make_user("squire@example.com")
    history(assigner, assignee)

    def statements(person) -> int:
        events = [request_of(assigner, person, n) for n in range(1, 4)]
        with CaptureQueriesContext(connection) as queries:
            dispatch_batch(events)
        return len(queries)

    assert statements(assignee) == statements(other)
