"""An inbox flood to one assignee, delivered by a real Celery worker (with
beat, the sweep every second) on Redis and PostgreSQL: at most the cap of
nudges, then one digest with the rest once the window allows; every delivery
row ends delivered. The window is shortened to seconds for the test (an hour
in production)."""

from __future__ import annotations

import os

import pytest

from notifications.models import NudgeDelivery, NudgeDeliveryStatus
from tests.harness.api import INBOX, inbox_body, mint, post_json
from tests.harness.services import (
    celery_worker,
    purge_queue,
    read_mails,
    subprocess_env,
    wait_until,
)

pytestmark = pytest.mark.processes

CAP = 3
FLOOD = 8
WINDOW = 10  # seconds: the flood is dispatched well within it


def sweeps_done(worker) -> int:
    return sum(
        1
        for line in worker.output().splitlines()
        if "relay.tasks.sweep[" in line and "succeeded" in line
    )


@pytest.mark.postgres
@pytest.mark.redis
def test_an_inbox_flood_sends_at_most_the_cap_then_one_digest(tmp_path, client, assigner, assignee):
    purge_queue(os.environ["REDIS_URL"])
    env = subprocess_env(tmp_path, NUDGE_CAP=str(CAP), TEST_NUDGE_CAP_WINDOW=str(WINDOW))
    token = mint(assigner)
    mail_dir = tmp_path / "mail"

    with celery_worker(env, tmp_path / "worker.log") as worker:
        worker.wait_for_output("ready.")
        for n in range(FLOOD):
            body = inbox_body(description=f"Flood item {n}", externalId=f"FLOOD-{n}")
            assert post_json(client, INBOX, body, token=token).status_code == 201

        mails = wait_until(
            lambda: len(read_mails(mail_dir)) >= CAP + 1 and read_mails(mail_dir),
            timeout=WINDOW + 40,
            what="the nudges and the digest",
        )
        # Let more sweeps run: nothing else may go out.
        seen = sweeps_done(worker)
        wait_until(lambda: sweeps_done(worker) >= seen + 3, timeout=30, what="sweeps")
        mails = read_mails(mail_dir)

    assert len(mails) == CAP + 1
    assert {m["To"] for m in mails} == {"knight@example.com"}
    singles = [m for m in mails if m["Subject"].startswith("Lead asks you: ")]
    (digest,) = [m for m in mails if m["Subject"] == f"Lead sent you {FLOOD - CAP} more requests"]
    assert len(singles) == CAP
    # Every request is in exactly one message.
    texts = [m.get_payload() for m in mails]
    for n in range(FLOOD):
        assert sum(f"Flood item {n}\n" in text for text in texts) == 1, n
    assert digest.get_payload().count("Flood item") == FLOOD - CAP

    deliveries = NudgeDelivery.objects.filter(recipient=assignee)
    assert deliveries.count() == FLOOD
    assert set(deliveries.values_list("status", flat=True)) == {NudgeDeliveryStatus.DELIVERED}
    assert deliveries.filter(is_digest=True).count() == 1
