"""Moves close together reach one person as one message, through a real
Celery worker (with beat, the sweep every second) on Redis and PostgreSQL
(issue 26: 10): the request goes at once; the two moves right after it (a
comment and a renegotiation, made by the services), within NUDGE_COALESCE_WINDOW (seconds
here, minutes in production), arrive together in one mail at the window's
end, in the order they happened; every nudge row ends delivered."""

from __future__ import annotations

import os
import time

import pytest

from audit.services import Actor
from commitments import services
from notifications.models import NudgeDelivery, NudgeDeliveryStatus
from tests.harness.services import (
    celery_worker,
    purge_queue,
    read_mails,
    subprocess_env,
    wait_until,
)

pytestmark = [pytest.mark.processes, pytest.mark.postgres, pytest.mark.redis]

WINDOW = 6  # seconds


def test_two_moves_close_together_arrive_as_one_message_after_the_first_went_at_once(
    tmp_path, assigner, assignee
):
    purge_queue(os.environ["REDIS_URL"])
    env = subprocess_env(tmp_path, NUDGE_COALESCE_WINDOW=str(WINDOW))
    mail_dir = tmp_path / "mail"
    actor = Actor.for_user(assigner)

    with celery_worker(env, tmp_path / "worker.log") as worker:
        worker.wait_for_output("ready.")
        started = time.monotonic()
        commitment = services.commitment_create_pending(
            actor=actor,
            assigner=assigner,
            assignee=assignee,
            description="Ship the report",
            deadline=None,
        )
        (first,) = wait_until(lambda: read_mails(mail_dir), timeout=20, what="the request")
        at_once = time.monotonic() - started
        services.commitment_comment(actor=actor, commitment_id=commitment.pk, body="Slides too")
        services.commitment_renegotiate(
            actor=actor, commitment_id=commitment.pk, description="Ship the report and slides"
        )
        mails = wait_until(
            lambda: len(read_mails(mail_dir)) >= 2 and read_mails(mail_dir),
            timeout=WINDOW + 30,
            what="the two moves together",
        )
        time.sleep(3)  # a few more sweeps: nothing else may go out
        mails = read_mails(mail_dir)

    assert at_once < WINDOW  # the first of a quiet spell is not delayed
    assert first["Subject"] == "Lead asks you: Ship the report"
    assert len(mails) == 2
    together = mails[1]
    assert together["Subject"] == "2 updates about your commitments"
    body = together.get_payload()
    assert body.index("1. Lead commented: Ship the report") < body.index(
        "2. Lead changed a request: Ship the report and slides"
    )
    deliveries = NudgeDelivery.objects.filter(recipient=assignee)
    assert deliveries.count() == 3
    assert set(deliveries.values_list("status", flat=True)) == {NudgeDeliveryStatus.DELIVERED}
