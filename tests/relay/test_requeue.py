"""The relay queues an event's dispatch again only when its message cannot
still be waiting in the broker (issue 29: under a backlog longer than
OUTBOX_REQUEUE_AFTER, events got 1.6 to 2.7 dispatch messages each). The
messages go to the test's Redis; no worker takes them, so what waits there
is known."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os

import pytest
import redis
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import EventKind, OutboxEvent
from commitments.outbox import REQUEUE_LOST_AFTER, outbox_event_retry_later
from relay import outbox
from tests.harness.services import purge_queue

pytestmark = [pytest.mark.django_db, pytest.mark.postgres, pytest.mark.redis]

REQUEUE = 120


@pytest.fixture
def broker(settings):
    settings.OUTBOX_REQUEUE_AFTER = REQUEUE
    purge_queue(os.environ["REDIS_URL"])
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    yield client
    purge_queue(os.environ["REDIS_URL"])
    client.close()


def ask(assigner, assignee, n: int) -> OutboxEvent:
    commitment = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description=f"Request {n}",
        deadline=None,
    )
    return OutboxEvent.objects.get(commitment=commitment, kind=EventKind.HANDSHAKE_REQUESTED)


def queued_ids(client) -> list[int]:
    """The event ids of every dispatch message waiting in the default queue."""
    ids = []
    for raw in client.lrange("celery", 0, -1):
        message = json.loads(raw)
        args = json.loads(base64.b64decode(message["body"]))[0]
        (arg,) = args
        ids += [int(pair[0]) for pair in arg] if isinstance(arg, list) else [int(arg)]
    return sorted(ids)


def test_an_event_whose_message_still_waits_is_not_queued_again(broker, assigner, assignee):
    events = [ask(assigner, assignee, n) for n in range(3)]
    start = timezone.now()
    assert outbox.outbox_relay(now=start) == 3
    assert queued_ids(broker) == [e.pk for e in events]  # one batch

    # Long after OUTBOX_REQUEUE_AFTER, the batch still waits (a backlog):
    # neither the relay nor the sweep queues it again; a new event goes.
    later = start + dt.timedelta(seconds=3 * REQUEUE)
    assert outbox.outbox_relay(now=later) == 0
    assert outbox.outbox_sweep(now=later).events == 0
    fresh = ask(assigner, assignee, 3)
    assert outbox.outbox_relay(now=later) == 1
    assert queued_ids(broker) == sorted([e.pk for e in events] + [fresh.pk])

    # A dispatch that failed was taken off the queue: due after its back-off,
    # it is queued again, waiting messages or not.
    outbox_event_retry_later(event_id=events[0].pk, now=later)
    assert outbox.outbox_relay(now=later + dt.timedelta(seconds=60)) == 1
    assert queued_ids(broker).count(events[0].pk) == 2


def test_once_the_messages_were_taken_what_is_still_undispatched_is_queued_again(
    broker, assigner, assignee
):
    """A worker took the message and died before the dispatch committed (or
    the broker lost it): with nothing waiting, queued again after
    OUTBOX_REQUEUE_AFTER, as before."""
    event = ask(assigner, assignee, 0)
    start = timezone.now()
    assert outbox.outbox_relay(now=start) == 1
    broker.delete("celery")  # taken
    assert outbox.outbox_relay(now=start + dt.timedelta(seconds=REQUEUE / 2)) == 0
    assert outbox.outbox_relay(now=start + dt.timedelta(seconds=REQUEUE + 1)) == 1
    assert queued_ids(broker) == [event.pk]


def test_a_message_lost_while_the_queue_stays_busy_is_queued_again_in_the_end(
    broker, assigner, assignee
):
    event = ask(assigner, assignee, 0)
    start = timezone.now()
    assert outbox.outbox_relay(now=start) == 1
    broker.delete("celery")  # lost
    other = ask(assigner, assignee, 1)
    assert outbox.outbox_relay() == 1  # the queue is busy from here on
    assert queued_ids(broker) == [other.pk]
    nearly = start + dt.timedelta(seconds=REQUEUE_LOST_AFTER * REQUEUE - 1)
    assert outbox.outbox_relay(now=nearly) == 0
    lost = start + dt.timedelta(seconds=REQUEUE_LOST_AFTER * REQUEUE + 1)
    assert outbox.outbox_relay(now=lost) == 2
    assert queued_ids(broker).count(event.pk) == 1
