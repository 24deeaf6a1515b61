"""A test nudge ("send a test") is leased like every other send (issue 16,
point 11): a worker that dies after claiming it no longer leaves it "sending"
for good; once the lease has run out the sweep queues it again and another
worker finishes it. Once in this process with a clock the test moves, once
with real workers, the first one killed in the middle of the send."""

from __future__ import annotations

import datetime as dt
import os
import signal
import threading

import pytest
from django.core import mail

# The services by their module: a `test_*` name imported here would be
# collected by pytest as a test.
from notifications import services
from notifications.models import ChannelKind, TestNudge, TestNudgeStatus
from notifications.services import notification_channel_set
from notifications.tasks import send_test_nudge
from relay.outbox import outbox_sweep
from tests.harness.services import (
    FakeService,
    Reply,
    celery_worker,
    purge_queue,
    subprocess_env,
    wait_until,
)
from tests.harness.webhooks import install_clock


class WorkerDied(BaseException):
    """Stands for the worker process vanishing mid-send: nothing after it
    runs, not even the handler that records an unexpected error."""


@pytest.mark.django_db
def test_a_test_whose_worker_died_after_the_claim_is_sent_by_the_next_one(
    monkeypatch, settings, assignee, queued, django_capture_on_commit_callbacks
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []
    clock = install_clock(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        test = services.test_nudge_request(user=assignee)
    assert queued == [(send_test_nudge, str(test.pk))]

    real_transport_for = services.transport_for

    def dies(kind, address):
        raise WorkerDied

    monkeypatch.setattr(services, "transport_for", dies)
    with pytest.raises(WorkerDied):
        services.test_nudge_send(test_id=test.pk)
    test.refresh_from_db()
    assert test.status == TestNudgeStatus.SENDING
    assert test.claimed_until == clock.now + dt.timedelta(seconds=settings.DELIVERY_LEASE_SECONDS)

    # While the lease holds, nobody takes it again: the worker may be alive.
    queued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert outbox_sweep(now=clock.now).tests == 0
    assert services.test_nudge_send(test_id=test.pk) is None

    # The lease runs out: the sweep queues it, and the next worker sends it.
    monkeypatch.setattr(services, "transport_for", real_transport_for)
    clock.advance(seconds=settings.DELIVERY_LEASE_SECONDS + 1)
    with django_capture_on_commit_callbacks(execute=True):
        assert outbox_sweep(now=clock.now).tests == 1
    assert queued == [(send_test_nudge, str(test.pk))]
    assert services.test_nudge_send(test_id=test.pk) == TestNudgeStatus.SENT
    test.refresh_from_db()
    assert (test.status, test.attempts, test.claimed_until) == (TestNudgeStatus.SENT, 2, None)
    assert len(mail.outbox) == 1
    # Done: no sweep queues it again.
    clock.advance(hours=1)
    assert outbox_sweep(now=clock.now).tests == 0


@pytest.mark.django_db
def test_a_test_that_keeps_killing_its_workers_fails_with_the_reason(
    monkeypatch, settings, assignee, queued, django_capture_on_commit_callbacks
):
    clock = install_clock(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        test = services.test_nudge_request(user=assignee)

    def dies(kind, address):
        raise WorkerDied

    monkeypatch.setattr(services, "transport_for", dies)
    for _ in range(services.TEST_MAX_ATTEMPTS):
        with pytest.raises(WorkerDied):
            services.test_nudge_send(test_id=test.pk)
        clock.advance(seconds=settings.DELIVERY_LEASE_SECONDS + 1)
    assert services.test_nudge_send(test_id=test.pk) == TestNudgeStatus.FAILED
    test.refresh_from_db()
    assert test.status == TestNudgeStatus.FAILED
    assert test.detail == services.TEST_INTERRUPTED
    assert test.claimed_until is None


@pytest.mark.processes
@pytest.mark.postgres
@pytest.mark.redis
def test_a_worker_killed_in_the_middle_of_a_test_does_not_leave_it_sending(tmp_path, assignee):
    purge_queue(os.environ["REDIS_URL"])
    env = subprocess_env(tmp_path, TEST_DELIVERY_LEASE_SECONDS="3", TEST_NOTIFY_HTTP_TIMEOUT="20")
    with FakeService() as slack:
        notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
        held = threading.Event()
        slack.reply_with(Reply(200, "ok", hold=held))  # the first request hangs

        with celery_worker(env, tmp_path / "first.log") as first:
            first.wait_for_output("ready.")
            test = services.test_nudge_request(user=assignee)
            slack.wait_for_requests(1)
            first.kill(signal.SIGKILL)
        held.set()
        test.refresh_from_db()
        assert test.status == TestNudgeStatus.SENDING  # claimed by the dead worker

        with celery_worker(env, tmp_path / "second.log") as second:
            second.wait_for_output("ready.")
            wait_until(
                lambda: TestNudge.objects.get(pk=test.pk).is_done, timeout=30, what="the test"
            )

    test.refresh_from_db()
    assert test.status == TestNudgeStatus.SENT
    assert test.attempts == 2
    assert len(slack.requests) == 2
