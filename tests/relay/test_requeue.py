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
from commitments.outbox import outbox_event_retry_later
from relay import outbox
from relay import tasks as relay_tasks
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


def run_waiting(client) -> int:
    """Take the first dispatch message off the queue and run its task here,
    as a worker would: returns how many events it dispatched."""
    before = OutboxEvent.objects.filter(dispatched_at__isnull=False).count()
    message = json.loads(client.lpop("celery"))
    (arg,) = json.loads(base64.b64decode(message["body"]))[0]
    if isinstance(arg, list):
        relay_tasks.dispatch_events(arg)
    else:
        relay_tasks.dispatch_event(arg)
    return OutboxEvent.objects.filter(dispatched_at__isnull=False).count() - before


def dispatched(events) -> bool:
    return not OutboxEvent.objects.filter(
        pk__in=[e.pk for e in events], dispatched_at__isnull=True
    ).exists()


def test_an_event_whose_message_still_waits_is_not_queued_again(broker, assigner, assignee):
    events = [ask(assigner, assignee, n) for n in range(3)]
    start = timezone.now()
    assert outbox.outbox_relay(now=start) == 3
    assert queued_ids(broker) == [e.pk for e in events]  # one batch

    # Long after OUTBOX_REQUEUE_AFTER, the batch still waits (a backlog):
    # neither the relay nor the sweep queues it again; nor does the relay
    # queue a new event while the queue is busy: the message waiting pulls
    # it when it runs.
    later = start + dt.timedelta(seconds=3 * REQUEUE)
    assert outbox.outbox_relay(now=later) == 0
    assert outbox.outbox_sweep(now=later).events == 0
    fresh = ask(assigner, assignee, 3)
    assert outbox.outbox_relay(now=later) == 0
    assert queued_ids(broker) == [e.pk for e in events]
    assert run_waiting(broker) == 4  # its three, and the new one with them
    assert dispatched([*events, fresh])
    assert queued_ids(broker) == []


def test_a_failed_dispatch_is_pulled_by_the_next_message_that_runs(broker, assigner, assignee):
    """A dispatch that failed was taken off the queue: due after its
    back-off, the next dispatch message a worker runs takes it with its own,
    waiting messages or not."""
    first = ask(assigner, assignee, 0)
    assert outbox.outbox_relay() == 1
    broker.delete("celery")  # taken, and its dispatch failed:
    outbox_event_retry_later(event_id=first.pk, now=timezone.now())
    second = ask(assigner, assignee, 1)
    assert outbox.outbox_relay() == 1
    assert queued_ids(broker) == [second.pk]  # busy from here on
    assert run_waiting(broker) == 1  # its back-off is not over
    assert dispatched([second]) and not dispatched([first])
    third = ask(assigner, assignee, 2)
    assert outbox.outbox_relay() == 1
    OutboxEvent.objects.filter(pk=first.pk).update(next_attempt_at=timezone.now())  # over
    assert run_waiting(broker) == 2
    assert dispatched([first, third])


def test_a_message_lost_while_the_queue_stays_busy_is_pulled_once_due_again(
    broker, assigner, assignee
):
    """The broker lost an event's message while the queue stays busy: the
    relay queues nothing then, and the messages that run take the event once
    its stamp (OUTBOX_REQUEUE_AFTER) ran out: no new message for it."""
    event = ask(assigner, assignee, 0)
    assert outbox.outbox_relay() == 1
    broker.delete("celery")  # lost
    other = ask(assigner, assignee, 1)
    assert outbox.outbox_relay() == 1  # the queue is busy from here on
    late = ask(assigner, assignee, 2)
    assert outbox.outbox_relay() == 0
    assert run_waiting(broker) == 2  # its own and the new one; the lost one is stamped
    assert dispatched([other, late]) and not dispatched([event])
    assert outbox.outbox_relay() == 0  # stamped: not before OUTBOX_REQUEUE_AFTER
    more = ask(assigner, assignee, 3)
    assert outbox.outbox_relay() == 1
    stamp_ran_out = timezone.now() - dt.timedelta(seconds=1)
    OutboxEvent.objects.filter(pk=event.pk).update(next_attempt_at=stamp_ran_out)
    assert outbox.outbox_relay() == 0  # busy
    assert run_waiting(broker) == 2
    assert dispatched([event, more])
    assert queued_ids(broker) == []
