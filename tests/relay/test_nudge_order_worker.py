"""Two real workers race two nudges to one person (issue 24): a request whose
send hangs at Slack, and its renegotiation right after. The renegotiation's
nudge waits for the request's, however often the sweep queues it, and the
two reach Slack in the order of the moves."""

from __future__ import annotations

import os
import threading

import pytest

from audit.services import Actor
from commitments import services
from notifications.models import ChannelKind, NudgeDelivery, NudgeDeliveryStatus
from notifications.services import notification_channel_set
from tests.harness.services import (
    FakeService,
    Reply,
    celery_worker,
    purge_queue,
    subprocess_env,
    wait_until,
)

pytestmark = [pytest.mark.processes, pytest.mark.postgres, pytest.mark.redis]


def sweeps_done(worker) -> int:
    return sum(
        1
        for line in worker.output().splitlines()
        if "relay.tasks.sweep[" in line and "succeeded" in line
    )


def test_a_renegotiation_never_overtakes_the_request_before_it(tmp_path, assigner, assignee):
    purge_queue(os.environ["REDIS_URL"])
    env = subprocess_env(tmp_path, TEST_NOTIFY_HTTP_TIMEOUT="30")
    with FakeService() as slack:
        notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
        held = threading.Event()
        slack.reply_with(Reply(200, "ok", hold=held))  # the request's send hangs
        with celery_worker(env, tmp_path / "worker.log", concurrency=2) as worker:
            worker.wait_for_output("ready.")
            commitment = services.commitment_create_pending(
                actor=Actor.for_user(assigner),
                assigner=assigner,
                assignee=assignee,
                description="Ship the report",
                deadline=None,
            )
            slack.wait_for_requests(1)  # in flight, held
            services.commitment_renegotiate(
                actor=Actor.for_user(assigner),
                commitment_id=commitment.pk,
                description="Ship the report and the slides",
            )
            change = wait_until(
                lambda: NudgeDelivery.objects.filter(
                    event__commitment=commitment, event__kind="renegotiated"
                ).first(),
                what="the renegotiation's nudge",
            )
            # The free worker takes it, and the sweep (every second) queues
            # it again and again: it still waits.
            start = sweeps_done(worker)
            wait_until(lambda: sweeps_done(worker) >= start + 3, what="three sweeps")
            assert len(slack.requests) == 1
            change.refresh_from_db()
            assert (change.status, change.attempts) == (NudgeDeliveryStatus.PENDING, 0)

            held.set()
            requests = slack.wait_for_requests(2)
            wait_until(
                lambda: (
                    not NudgeDelivery.objects.exclude(status=NudgeDeliveryStatus.DELIVERED).exists()
                ),
                what="both delivered",
            )

    texts = [request.body["text"] for request in requests]
    assert len(texts) == 2
    assert texts[0].startswith("*Lead asks you:")
    assert texts[1].startswith("*Lead changed a request:")
