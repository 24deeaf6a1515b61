"""A backlog of outbox events is dispatched in batches as large as it allows,
by a real Celery worker (threads, as run_worker runs it, with its relay) on
the test's PostgreSQL and Redis, mail to a local SMTP server
(tests/harness/smtp.py) that notes each message's Message-ID (the
delivery's id).

Issue 29: under a trickle of calls faster than the worker, the relay queued
each look's one or two new events as a dispatch task of their own, so a
backlog sat in the broker as many tiny tasks (2.6 events a task with 450
waiting) and never got the cheap per-event cost of a batch. Now, while
dispatch messages wait, the relay queues nothing, and each message tops its
batch up with what is due when it runs (`relay.outbox.outbox_events_dispatch_due`):
N events waiting take about N / DISPATCH_BATCH dispatch tasks, not N, and
their nudges go in batches of the same size.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import os

import pytest
import redis
from django.utils import timezone

from audit.services import Actor
from commitments import services
from notifications.models import AttemptOutcome, NudgeDelivery, NudgeDeliveryStatus
from relay import outbox
from tests.harness.services import celery_worker, purge_queue, subprocess_env, wait_until
from tests.harness.smtp import SmtpSink

pytestmark = [pytest.mark.processes, pytest.mark.postgres, pytest.mark.redis]

N = 45


def queued_ids() -> list[int]:
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    try:
        ids = []
        for raw in client.lrange("celery", 0, -1):
            (arg,) = json.loads(base64.b64decode(json.loads(raw)["body"]))[0]
            ids += [int(pair[0]) for pair in arg] if isinstance(arg, list) else [int(arg)]
        return ids
    finally:
        client.close()


def tasks_run(log: str, name: str) -> int:
    return sum(1 for line in log.splitlines() if f"{name}[" in line and "succeeded" in line)


def test_a_backlog_of_events_is_dispatched_and_sent_by_a_few_batch_tasks(
    tmp_path, assigner, make_user
):
    purge_queue(os.environ["REDIS_URL"])
    people = [make_user(f"backlog{n}@example.com") for n in range(N)]
    commitments = []
    for n, person in enumerate(people):
        # One commit each, and the relay's look after each (the listener
        # wakes on every commit): no worker runs yet, so from the second on
        # the queue is busy and the relay leaves the new event to it.
        commitments.append(
            services.commitment_create_pending(
                actor=Actor.for_user(assigner),
                assigner=assigner,
                assignee=person,
                description=f"Backlog request {n}",
                deadline=timezone.now() + dt.timedelta(days=3),
            )
        )
        assert outbox.outbox_relay() == (1 if n == 0 else 0)
    assert len(queued_ids()) == 1  # one message for 45 events

    rows = NudgeDelivery.objects.filter(event__commitment__in=commitments)
    with SmtpSink() as sink:
        env = subprocess_env(tmp_path, **sink.env())
        with celery_worker(env, tmp_path / "worker.log") as worker:
            worker.wait_for_output("ready.")
            wait_until(
                lambda: rows.filter(status=NudgeDeliveryStatus.DELIVERED).count() == N,
                timeout=90,
                what="every nudge delivered",
            )
        log = worker.output()

    dispatches = tasks_run(log, "relay.tasks.dispatch_events") + tasks_run(
        log, "relay.tasks.dispatch_event"
    )
    # The waiting message takes a batch; the relay queues the rest in
    # batches once the queue is empty (one more when it looks before the
    # first message has taken its batch).
    assert 1 <= dispatches <= math.ceil(N / outbox.DISPATCH_BATCH) + 1
    sends = tasks_run(log, "notifications.tasks.deliver_nudges") + tasks_run(
        log, "notifications.tasks.deliver_nudge"
    )
    assert sends <= 2 * dispatches
    # Each delivered once, with one attempt.
    assert sorted(sink.recipients) == sorted(p.email for p in people)
    assert len(set(sink.message_ids)) == len(sink.message_ids) == N
    for delivery in rows:
        assert [a.outcome for a in delivery.attempt_log.all()] == [AttemptOutcome.DELIVERED]
