"""A batch of outbox events dispatched at once (`outbox_events_dispatch`,
the `dispatch_events` task): a few statements for the batch, not a few per
event; the same deliveries, in the same states, as dispatching the events
one after another (the cap, coalescing, the person's choices); nothing made
twice; one bad event leaves the rest dispatched. Called directly on the
test's PostgreSQL; tests/relay/test_batches.py runs a real worker."""

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
from notifications.models import NewsWhen, NudgeChannel, NudgeDelivery, NudgeDeliveryStatus
from relay import outbox
from webhooks import payloads
from webhooks.models import WebhookDelivery
from webhooks.services import webhook_endpoint_create

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture(autouse=True)
def _settings(settings, monkeypatch):
    settings.NUDGE_CAP = 3
    settings.NUDGE_CAP_WINDOW = 3600
    settings.NUDGE_COALESCE_WINDOW = 180
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    monkeypatch.setattr(jobs, "enqueue", lambda *args, **kwargs: True)


def ask(assigner, assignee, n: int, **extra) -> OutboxEvent:
    commitment = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description=f"Request {n}",
        deadline=timezone.now() + dt.timedelta(days=3),
        **extra,
    )
    return OutboxEvent.objects.get(commitment=commitment, kind=EventKind.HANDSHAKE_REQUESTED)


def complete(assigner, assignee, n: int) -> OutboxEvent:
    """A mapped request, accepted and completed: its three events."""
    event = ask(assigner, assignee, n, external_system="jira", external_id=f"OPS-{n}")
    commitment_id = event.commitment_id
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment_id)
    services.commitment_complete(actor=Actor.for_user(assignee), commitment_id=commitment_id)
    return OutboxEvent.objects.get(commitment_id=commitment_id, kind=EventKind.COMPLETED)


def batch(events) -> int:
    return outbox.outbox_events_dispatch(events=[(event.pk, "") for event in events])


def shape(recipient) -> list[tuple]:
    """What a person's nudges came to, in the order of the moves: the
    digests by their place in that order."""
    rows = list(NudgeDelivery.objects.filter(recipient=recipient).order_by("event_id"))
    place = {row.pk: n for n, row in enumerate(rows)}
    return [
        (
            row.status,
            row.is_digest,
            row.digest_reason if row.is_digest else "",
            place.get(row.digest_id) if row.digest_id else None,
            row.enqueued_at is not None,
        )
        for row in rows
    ]


def test_a_batch_decides_as_one_dispatch_after_another_would(assigner, make_user):
    """Seven requests from one assigner to each of two people: to one each
    dispatched alone as it comes, to the other all in one batch. The cap
    (three an hour), coalescing (one message per window) and their digests
    come out the same. A third person chose the daily digest for requests,
    a fourth not to hear of them."""
    alone, together = make_user("alone@example.com"), make_user("together@example.com")
    daily, off = make_user("daily@example.com"), make_user("off@example.com")
    NudgeChannel.objects.create(user=daily, news_asked=NewsWhen.DIGEST)
    NudgeChannel.objects.create(user=off, news_asked=NewsWhen.OFF)
    for n in range(7):
        outbox.outbox_event_dispatch(event_id=ask(assigner, alone, n).pk)
    events = [ask(assigner, person, n) for n in range(7) for person in (together, daily, off)]

    assert batch(events) == len(events)

    expected = shape(alone)
    # The first goes; the next starts coalescing's digest, the third waits in
    # it; the fourth is over the cap and starts its digest, the rest wait there.
    assert [row[:4] for row in expected] == [
        (NudgeDeliveryStatus.PENDING, False, "", None),
        (NudgeDeliveryStatus.PENDING, True, "together", None),
        (NudgeDeliveryStatus.HELD, False, "", 1),
        (NudgeDeliveryStatus.PENDING, True, "cap", None),
        *[(NudgeDeliveryStatus.HELD, False, "", 3)] * 3,
    ]
    assert shape(together) == expected
    assert [row[:4] for row in shape(daily)] == [
        (NudgeDeliveryStatus.PENDING, True, "daily", None),
        *[(NudgeDeliveryStatus.HELD, False, "", 0)] * 6,
    ]
    assert shape(off) == []
    assert OutboxEvent.objects.filter(dispatched_at__isnull=True).count() == 0


def test_the_cap_in_a_batch_is_the_cap_one_by_one(assigner, make_user, settings):
    settings.NUDGE_COALESCE_WINDOW = 0
    alone, together = make_user("alone@example.com"), make_user("together@example.com")
    for n in range(6):
        outbox.outbox_event_dispatch(event_id=ask(assigner, alone, n).pk)
    batch([ask(assigner, together, n) for n in range(6)])

    expected = shape(alone)
    assert [row[:4] for row in expected] == [
        *[(NudgeDeliveryStatus.PENDING, False, "", None)] * 3,
        (NudgeDeliveryStatus.PENDING, True, "cap", None),
        *[(NudgeDeliveryStatus.HELD, False, "", 3)] * 2,
    ]
    assert shape(together) == expected


def test_a_batch_with_one_bad_event_dispatches_the_rest(assigner, make_user, monkeypatch):
    webhook_endpoint_create(user=assigner, external_system="jira", url="http://127.0.0.1:9/")
    people = [make_user(f"p{n}@example.com") for n in range(4)]
    events = [complete(assigner, person, n) for n, person in enumerate(people)]
    bad = events[2]
    envelope = payloads.event_envelope

    def breaks_on_the_bad_one(event, **kwargs):
        if event.pk == bad.pk:
            raise RuntimeError("a body that cannot be made")
        return envelope(event, **kwargs)

    monkeypatch.setattr(payloads, "event_envelope", breaks_on_the_bad_one)
    assert batch(events) == 3

    for event in events:
        event.refresh_from_db()
        if event.pk == bad.pk:
            # Nothing of it kept; left for the sweep after a back-off.
            assert event.dispatched_at is None
            assert event.dispatch_attempts == 1
            assert event.next_attempt_at > timezone.now()
            assert not NudgeDelivery.objects.filter(event=event).exists()
            assert not WebhookDelivery.objects.filter(event=event).exists()
        else:
            assert event.dispatched_at is not None
            assert NudgeDelivery.objects.filter(event=event).count() == 1
            assert WebhookDelivery.objects.filter(event=event).count() == 1


def test_a_batch_dispatched_again_makes_nothing_twice(assigner, make_user):
    webhook_endpoint_create(user=assigner, external_system="jira", url="http://127.0.0.1:9/")
    events = [complete(assigner, make_user(f"p{n}@example.com"), n) for n in range(3)]
    events += [ask(assigner, make_user(f"q{n}@example.com"), n) for n in range(3)]
    batch(events)
    nudges, webhooks = NudgeDelivery.objects.count(), WebhookDelivery.objects.count()
    assert (nudges, webhooks) == (6, 3)

    # The same message again (the relay queued it twice): one statement.
    with CaptureQueriesContext(connection) as queries:
        assert batch(events) == len(events)
    assert [q["sql"].split()[0] for q in queries] == ["BEGIN", "UPDATE", "COMMIT"]
    # Put back undispatched (as an operator might): made again, nothing is.
    OutboxEvent.objects.filter(pk__in=[e.pk for e in events]).update(dispatched_at=None)
    batch(events)
    assert (NudgeDelivery.objects.count(), WebhookDelivery.objects.count()) == (nudges, webhooks)
    assert not OutboxEvent.objects.filter(
        pk__in=[e.pk for e in events], dispatched_at__isnull=True
    ).exists()


def _statements(events) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert batch(events) == len(events)
    return len(queries)


@pytest.mark.parametrize("coalesce", [0, 180], ids=["each-at-once", "coalescing"])
def test_a_batch_costs_a_few_statements_whatever_its_size(assigner, make_user, settings, coalesce):
    """Requests (capped, to many people) and completions (a nudge to the
    assigner and a webhook each): 4 events or 16, the same statements."""
    settings.NUDGE_COALESCE_WINDOW = coalesce
    webhook_endpoint_create(user=assigner, external_system="jira", url="http://127.0.0.1:9/")

    def events(prefix: str, count: int, start: int) -> list:
        made = []
        for n in range(start, start + count):
            person = make_user(f"{prefix}{n}@example.com")
            made += [ask(assigner, person, n), complete(assigner, person, 100 + n)]
        return made

    small, large = events("s", 2, 0), events("l", 8, 10)
    cost = _statements(small)
    assert _statements(large) == cost
    assert cost <= 22
    assert NudgeDelivery.objects.count() == len(small) + len(large)  # one per event
