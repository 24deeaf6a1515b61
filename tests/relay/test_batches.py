"""The worker's batches, with a real Celery worker (threads, as run_worker
runs it) on the test's PostgreSQL and Redis, mail to a local SMTP server
(tests/harness/smtp.py) that notes each message's Message-ID, which is
the delivery's id: the receiver's count of each delivery.

Each test dispatches its moves here and queues their nudges as one batch
task (`notifications.tasks.deliver_nudges`, as a batch of dispatches or the
sweep queues them), so what the worker gets is known: the batch goes over
one mail connection; a refused address in the middle fails alone; a worker
SIGKILLed in the middle of a batch loses nothing and sends nothing twice
(what it had claimed and not begun waits for its lease, then goes). How the
relay and the sweep make batches: tests/relay/test_outbox.py.
"""

from __future__ import annotations

import datetime as dt
import os
import signal

import pytest
from django.db import transaction
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import OutboxEvent
from lib import jobs
from notifications import tasks as nudge_tasks
from notifications.models import AttemptOutcome, NudgeDelivery, NudgeDeliveryStatus
from relay import outbox
from tests.harness.services import celery_worker, purge_queue, subprocess_env, wait_until
from tests.harness.smtp import SmtpSink

pytestmark = [pytest.mark.processes, pytest.mark.postgres, pytest.mark.redis]


def ask_together(assigner, assignees) -> list:
    """One request to each, committed together: the relay finds them due at
    once and queues them as one batch."""
    with transaction.atomic():
        return [
            services.commitment_create_pending(
                actor=Actor.for_user(assigner),
                assigner=assigner,
                assignee=person,
                description=f"Batch request {n}",
                deadline=timezone.now() + dt.timedelta(days=3),
            )
            for n, person in enumerate(assignees)
        ]


def queue_one_batch(commitments, monkeypatch) -> list[str]:
    """Dispatch the moves here (nothing queued), then queue all their nudges
    as one `deliver_nudges`, in the order of the moves."""
    with monkeypatch.context() as patched:
        patched.setattr(jobs, "enqueue", lambda *args, **kwargs: True)
        events = OutboxEvent.objects.filter(commitment__in=commitments).order_by("pk")
        outbox.outbox_events_dispatch(events=[(event.pk, "") for event in events])
    ids = [
        str(pk)
        for pk in NudgeDelivery.objects.filter(event__commitment__in=commitments)
        .order_by("event_id")
        .values_list("pk", flat=True)
    ]
    assert len(ids) == len(commitments)
    assert jobs.enqueue(nudge_tasks.deliver_nudges, ids)
    return ids


def settled(commitments) -> bool:
    rows = NudgeDelivery.objects.filter(event__commitment__in=commitments)
    return (
        rows.count() == len(commitments)
        and not rows.filter(
            status__in=[NudgeDeliveryStatus.PENDING, NudgeDeliveryStatus.SENDING]
        ).exists()
    )


@pytest.fixture
def env(tmp_path):
    purge_queue(os.environ["REDIS_URL"])
    # No sweep queues the batch's rows again while it runs.
    return subprocess_env(tmp_path, TEST_OUTBOX_REQUEUE_AFTER="3600")


def test_a_batch_with_one_refused_address_delivers_the_rest_over_one_connection(
    tmp_path, env, assigner, make_user, monkeypatch
):
    people = [make_user(f"batch{n}@example.com") for n in range(3)]
    people.append(make_user("refused@example.com"))
    people += [make_user(f"batch{n}@example.com") for n in range(3, 6)]
    with SmtpSink(refuse="refused") as sink:
        env.update(sink.env())
        commitments = ask_together(assigner, people)
        queue_one_batch(commitments, monkeypatch)
        with celery_worker(env, tmp_path / "worker.log") as worker:
            worker.wait_for_output("ready.")
            wait_until(lambda: settled(commitments), timeout=60, what="every nudge settled")
        log = worker.output()

    assert log.count("notifications.tasks.deliver_nudges[") == 2  # received, succeeded
    good = [p.email for p in people if p.email != "refused@example.com"]
    assert sorted(sink.recipients) == sorted(good)  # each once
    assert sink.connections == 1
    for commitment, person in zip(commitments, people, strict=True):
        delivery = NudgeDelivery.objects.get(event__commitment=commitment)
        outcomes = [a.outcome for a in delivery.attempt_log.all()]
        if person.email == "refused@example.com":
            assert delivery.status == NudgeDeliveryStatus.FAILED
            assert outcomes == [AttemptOutcome.PERMANENT]
            assert "refused the address" in delivery.last_error
        else:
            assert delivery.status == NudgeDeliveryStatus.DELIVERED
            assert outcomes == [AttemptOutcome.DELIVERED]


def test_a_worker_killed_in_the_middle_of_a_batch_loses_nothing_and_sends_nothing_twice(
    tmp_path, env, assigner, make_user, monkeypatch
):
    people = [make_user(f"kill{n}@example.com") for n in range(8)]
    # Leases run out soon after the kill (a batch sends for a third of it).
    env["TEST_DELIVERY_LEASE_SECONDS"] = "9"
    with SmtpSink(mail_delay=0.4) as sink:
        env.update(sink.env())
        commitments = ask_together(assigner, people)
        queue_one_batch(commitments, monkeypatch)
        with celery_worker(env, tmp_path / "first.log") as first:
            first.wait_for_output("ready.")
            # Three messages accepted and recorded (the fourth is begun only
            # after the third's outcome is committed), the fourth begun:
            # nothing of it sent yet. Killed there, in the middle of the batch.
            wait_until(
                lambda: sink.mails_started >= 4, timeout=60, what="the batch's fourth message"
            )
            first.kill(signal.SIGKILL)
        assert len(sink.message_ids) == 3
        rows = NudgeDelivery.objects.filter(event__commitment__in=commitments)
        assert rows.filter(status=NudgeDeliveryStatus.DELIVERED).count() == 3
        assert rows.filter(status=NudgeDeliveryStatus.SENDING).count() == 5  # the dead one's

        # The second worker's sweep finds the dead one's claims when their
        # leases run out.
        env["TEST_OUTBOX_REQUEUE_AFTER"] = "1"
        with celery_worker(env, tmp_path / "second.log") as second:
            second.wait_for_output("ready.")
            wait_until(lambda: settled(commitments), timeout=60, what="the rest of the batch")

    # The receiver's count: every delivery once, none twice.
    ids = sorted(sink.message_ids)
    assert len(ids) == 8
    assert len(set(ids)) == 8
    assert sorted(sink.recipients) == sorted(p.email for p in people)
    for delivery in rows:
        assert delivery.status == NudgeDeliveryStatus.DELIVERED
        outcomes = [a.outcome for a in delivery.attempt_log.all()]
        assert outcomes.count(AttemptOutcome.DELIVERED) == 1
        assert outcomes[-1] == AttemptOutcome.DELIVERED
        assert f"<nudge-{delivery.pk}@" in " ".join(ids)  # the receiver saw each id
