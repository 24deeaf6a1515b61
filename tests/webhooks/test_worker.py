"""Webhooks end to end: real Celery workers (subprocesses) on Redis and
PostgreSQL, a real HTTP receiver on loopback. A sync call's completion
reaches the receiver with exactly the envelope and two valid signatures; a
receiver that never answers costs WEBHOOK_TIMEOUT per attempt and does not
delay a nudge; a worker SIGKILLed mid-send is replaced and the event is
delivered with the same delivery id."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import threading

import pytest
import standardwebhooks

from audit.services import Actor
from commitments import services
from commitments.models import Commitment
from notifications.models import NudgeDelivery, NudgeDeliveryStatus
from tests.harness.api import SYNC, post_json
from tests.harness.services import (
    Process,
    Reply,
    celery_worker,
    manage,
    run_python,
    subprocess_env,
    wait_until,
)
from tests.harness.webhooks import (
    Receiver,
    ids_of,
    line,
    mapped_active,
    purge_queues,
    webhook_worker,
)
from webhooks import dispatch
from webhooks.models import (
    AttemptOutcome,
    WebhookAttempt,
    WebhookDelivery,
    WebhookDeliveryStatus,
)
from webhooks.payloads import iso_millis
from webhooks.services import webhook_endpoint_create

pytestmark = pytest.mark.processes


@pytest.fixture
def env(tmp_path, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    purge_queues(os.environ["REDIS_URL"])
    return subprocess_env(tmp_path, OUTBOUND_ALLOW_LOOPBACK="1")


@pytest.fixture
def receiver():
    with Receiver() as fake:
        yield fake


def webhook_for(commitment, event_name: str) -> WebhookDelivery | None:
    return WebhookDelivery.objects.filter(commitment=commitment, event_name=event_name).first()


@pytest.mark.postgres
@pytest.mark.redis
def test_a_sync_completion_reaches_the_receiver_exactly_and_verifies_both_ways(
    tmp_path, env, receiver, client, assigner, assignee
):
    from integrations.services import api_token_mint

    endpoint, secret = webhook_endpoint_create(
        user=assigner, external_system="jira", url=receiver.url
    )
    minted = api_token_mint(user=assigner, name="Tracker")
    # run_worker, as ./scripts/serve starts it: the nudges' worker with the
    # sweep, and a second worker for the webhooks' queue.
    worker = Process(
        manage("run_worker", "--concurrency=1", "--webhook-concurrency=1"),
        env,
        tmp_path / "worker.log",
    )
    with worker:
        worker.wait_for_output("ready.")
        commitment = mapped_active(assigner, assignee)
        receiver.wait_for_hits(1)  # commitment.activated

        response = post_json(
            client,
            SYNC,
            {"externalSystem": "jira", "externalId": "OPS-42", "status": "Completed"},
            token=minted.plaintext,
        )
        assert response.status_code == 200, response.content
        wait_until(
            lambda: any(
                h.header("X-Service-Event") == "commitment.completed" for h in receiver.hits
            ),
            what="the completion at the receiver",
        )
        delivery = wait_until(
            lambda: WebhookDelivery.objects.filter(
                commitment=commitment,
                event_name="commitment.completed",
                status=WebhookDeliveryStatus.DELIVERED,
            ).first(),
            what="the delivery recorded",
        )

    [hit] = [h for h in receiver.hits if h.header("X-Service-Event") == "commitment.completed"]
    commitment = Commitment.objects.get(pk=commitment.pk)
    assert json.loads(hit.body) == {
        "event": "commitment.completed",
        "id": str(commitment.pk),
        "externalSystem": "jira",
        "externalId": "OPS-42",
        "previousStatus": "Active",
        "newStatus": "Completed",
        "completedAt": iso_millis(commitment.completed_at),
        "actor": {"kind": "api_token", "userId": str(assigner.pk), "tokenId": str(minted.token.pk)},
        "timestamp": iso_millis(commitment.completed_at),
    }
    assert list(json.loads(hit.body)) == [
        "event",
        "id",
        "externalSystem",
        "externalId",
        "previousStatus",
        "newStatus",
        "completedAt",
        "actor",
        "timestamp",
    ]
    assert hit.header("X-Service-Delivery") == str(delivery.pk)
    expected = "sha256=" + hmac.new(secret.encode(), hit.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, hit.header("X-Service-Signature"))
    assert standardwebhooks.Webhook(secret).verify(hit.body, hit.headers)["id"] == str(
        commitment.pk
    )
    assert endpoint.deliveries.count() == 2  # activated and completed, nothing else


@pytest.mark.postgres
@pytest.mark.redis
def test_a_receiver_that_never_answers_costs_the_timeout_and_delays_no_nudge(
    tmp_path, env, receiver, assigner, assignee
):
    never = threading.Event()
    receiver.default = Reply(200, "late", hold=never)
    receiver._holds.append(never)
    webhook_endpoint_create(user=assigner, external_system="jira", url=receiver.url)
    with (
        celery_worker(env, tmp_path / "worker.log") as worker,
        webhook_worker(env, tmp_path / "webhooks.log") as hooks,
    ):
        worker.wait_for_output("ready.")
        hooks.wait_for_output("ready.")
        commitment = mapped_active(assigner, assignee)
        receiver.wait_for_hits(1)  # the activation, now hanging at the receiver
        delivery = webhook_for(commitment, "commitment.activated")

        # Meanwhile a new request nudges the assignee, at once.
        other = services.commitment_create_pending(
            actor=Actor.for_user(assigner),
            assigner=assigner,
            assignee=assignee,
            description="Review the budget",
            deadline=None,
        )
        wait_until(
            lambda: NudgeDelivery.objects.filter(
                event__commitment=other, status=NudgeDeliveryStatus.DELIVERED
            ).exists(),
            what="the nudge",
        )
        # ... while the webhook's attempt is still waiting for its answer.
        attempt = delivery.attempt_log.get()
        assert attempt.outcome == ""

        attempt = wait_until(
            lambda: delivery.attempt_log.filter(outcome=AttemptOutcome.FAILED).first(),
            timeout=30,
            what="the attempt to time out",
        )
    # WEBHOOK_TIMEOUT (10 s) for the whole attempt, and not much more.
    assert 10_000 <= attempt.duration_ms < 12_000
    assert "10 s" in attempt.error
    delivery.refresh_from_db()
    assert delivery.status in (WebhookDeliveryStatus.PENDING, WebhookDeliveryStatus.SENDING)


@pytest.mark.postgres
@pytest.mark.redis
def test_a_hanging_receiver_holds_one_webhook_worker_and_other_endpoints_go_on(
    tmp_path, env, receiver, assigner, assignee, make_user
):
    never = threading.Event()
    receiver.default = Reply(200, "late", hold=never)
    receiver._holds.append(never)
    webhook_endpoint_create(user=assigner, external_system="jira", url=receiver.url)
    other = make_user("other@example.com")
    with Receiver() as healthy:
        webhook_endpoint_create(user=other, external_system="jira", url=healthy.url)
        hooks = webhook_worker(env, tmp_path / "webhooks.log", concurrency=2)
        with celery_worker(env, tmp_path / "worker.log") as worker, hooks:
            worker.wait_for_output("ready.")
            hooks.wait_for_output("ready.")
            # Two events for the hanging receiver first, then one for the other.
            mapped_active(assigner, assignee, external_id="OPS-1")
            mapped_active(assigner, assignee, external_id="OPS-2")
            receiver.wait_for_hits(1)
            mapped_active(other, assignee, external_id="OPS-3")
            healthy.wait_for_hits(1)
            # The other endpoint got its event while the first send still hangs,
            # and the second one for the hanging receiver waits for its turn:
            # one attempt begun. (Dispatched together, the two come in one
            # batch, which claims both and sends one at a time.)
            assert len(receiver.hits) == 1
            assert WebhookAttempt.objects.filter(delivery__endpoint__user=assigner).count() == 1
            assert (
                WebhookDelivery.objects.filter(
                    endpoint__user=assigner, status=WebhookDeliveryStatus.DELIVERED
                ).count()
                == 0
            )


@pytest.mark.postgres
@pytest.mark.redis
def test_one_person_s_ten_hanging_endpoints_do_not_delay_another_person_s_delivery(
    tmp_path, env, assigner, make_user
):
    """Issue 16, point 3: one account with slow receivers cannot hold every
    webhook worker. Three workers, one person's ten endpoints that never
    answer (queued first), then another person's event: it is delivered
    while the first two hanging sends are still waiting for their answer
    (so it waited for no attempt's timeout), and the hanging person never
    had more than WEBHOOK_USER_IN_FLIGHT (2) sends in flight."""
    from lib import jobs
    from tests.harness.webhook_pages import delivery_row, endpoint_for
    from webhooks.tasks import deliver_webhook

    env["TEST_WEBHOOK_TIMEOUT"] = "8"  # one attempt's timeout, short for the test
    env["WEBHOOK_USER_IN_FLIGHT"] = "2"
    never = threading.Event()
    other = make_user("other@example.com")
    with Receiver(Reply(200, "late", hold=never)) as hanging, Receiver() as healthy:
        hanging._holds.append(never)
        hogs = [endpoint_for(assigner, system=f"sys-{n}", url=hanging.url) for n in range(10)]
        theirs = endpoint_for(other, url=healthy.url)
        with webhook_worker(env, tmp_path / "webhooks.log", concurrency=3) as hooks:
            hooks.wait_for_output("ready.")
            for endpoint in hogs:
                assert jobs.enqueue(deliver_webhook, str(delivery_row(endpoint, None).pk))
            hanging.wait_for_hits(2)
            delivery = delivery_row(theirs, None)
            assert jobs.enqueue(deliver_webhook, str(delivery.pk))

            healthy.wait_for_hits(1, timeout=30)
            ended = WebhookAttempt.objects.filter(delivery__endpoint__user=assigner).exclude(
                outcome=""
            )
            assert not ended.exists(), "the other person's delivery waited for a timeout"
            assert len(hanging.hits) == 2
            assert (
                WebhookDelivery.objects.filter(
                    endpoint__user=assigner, status=WebhookDeliveryStatus.SENDING
                ).count()
                == 2
            )
            wait_until(
                lambda: WebhookDelivery.objects.filter(
                    pk=delivery.pk, status=WebhookDeliveryStatus.DELIVERED
                ).exists(),
                what="the other person's delivery recorded",
            )


@pytest.mark.postgres
@pytest.mark.redis
def test_a_worker_killed_mid_send_is_followed_by_delivery_with_the_same_id(
    tmp_path, env, receiver, assigner, assignee
):
    env["TEST_DELIVERY_LEASE_SECONDS"] = "4"
    held = threading.Event()
    receiver.reply_with(Reply(200, "too late", hold=held))
    webhook_endpoint_create(user=assigner, external_system="jira", url=receiver.url)
    with celery_worker(env, tmp_path / "worker.log") as worker:
        worker.wait_for_output("ready.")
        with webhook_worker(env, tmp_path / "webhooks-1.log") as first:
            first.wait_for_output("ready.")
            commitment = mapped_active(assigner, assignee)
            receiver.wait_for_hits(1)
            first.kill()  # SIGKILL, mid-send
        held.set()
        with webhook_worker(env, tmp_path / "webhooks-2.log") as second:
            second.wait_for_output("ready.")
            delivery = wait_until(
                lambda: WebhookDelivery.objects.filter(
                    commitment=commitment, status=WebhookDeliveryStatus.DELIVERED
                ).first(),
                timeout=30,
                what="the delivery after the kill",
            )
    ids = {h.header("X-Service-Delivery") for h in receiver.hits}
    assert ids == {str(delivery.pk)}
    assert len(receiver.hits) == 2
    assert [a.outcome for a in delivery.attempt_log.all()] == [
        AttemptOutcome.INTERRUPTED,
        AttemptOutcome.DELIVERED,
    ]


def test_the_embedded_default_delivers_a_webhook_with_no_services(tmp_path, receiver):
    """SQLite and the filesystem broker, as `./scripts/serve` runs with nothing
    configured: run_worker's webhook worker consumes its queue there too."""
    env = subprocess_env(
        tmp_path,
        DATABASE_URL=None,
        REDIS_URL=None,
        OUTBOUND_ALLOW_LOOPBACK="1",
        TEST_OUTBOX_SWEEP_INTERVAL="3600",
    )
    subprocess.run(
        manage("migrate", "--noinput"), env=env, check=True, timeout=120, capture_output=True
    )
    run_python(
        f"""
from accounts.models import User
from accounts.services import user_email_mark_verified
from audit.services import Actor
from commitments import services
from webhooks.services import webhook_endpoint_create
lead = User.objects.create_user("lead@example.com", "x" * 20)
knight = User.objects.create_user("knight@example.com", "x" * 20)
user_email_mark_verified(user=knight)
webhook_endpoint_create(user=lead, external_system="jira", url={receiver.url!r})
commitment = services.commitment_create_pending(
    actor=Actor.for_user(lead), assigner=lead, assignee=knight,
    description="Water the shrubbery", deadline=None,
    external_system="jira", external_id="OPS-1")
services.commitment_accept(actor=Actor.for_user(knight), commitment_id=commitment.pk)
""",
        env,
    )
    worker = Process(
        manage("run_worker", "--concurrency=1", "--webhook-concurrency=1"),
        env,
        tmp_path / "worker.log",
    )
    with worker:
        [hit] = receiver.wait_for_hits(1, timeout=40)
    assert json.loads(hit.body)["event"] == "commitment.activated"
    assert json.loads(hit.body)["externalId"] == "OPS-1"


@pytest.mark.postgres
@pytest.mark.redis
def test_a_withdrawal_reaches_an_endpoint_that_chose_it_signed_and_not_one_that_did_not(
    tmp_path, env, receiver, assigner, assignee, make_user
):
    """Issue 26, point 7: a new event (commitment.withdrawn), made by the
    real service, goes through the relay and a real webhook worker to the
    endpoint that chose it, with its envelope and both signatures; another
    person's endpoint that kept the four gets the activation, not the
    withdrawal."""
    endpoint, secret = webhook_endpoint_create(
        user=assigner, external_system="jira", url=receiver.url, events=["commitment.withdrawn"]
    )
    other = make_user("other@example.com")
    with Receiver() as four_only:
        webhook_endpoint_create(user=other, external_system="jira", url=four_only.url)
        with (
            celery_worker(env, tmp_path / "worker.log") as worker,
            webhook_worker(env, tmp_path / "webhooks.log") as hooks,
        ):
            worker.wait_for_output("ready.")
            hooks.wait_for_output("ready.")
            commitment = mapped_active(assigner, assignee)
            theirs = mapped_active(other, assignee, external_id="OPS-7")
            receiver.wait_for_hits(1)  # commitment.activated
            four_only.wait_for_hits(1)
            services.commitment_withdraw(
                actor=Actor.for_user(assigner), commitment_id=commitment.pk, reason="Not needed"
            )
            services.commitment_withdraw(actor=Actor.for_user(other), commitment_id=theirs.pk)
            wait_until(
                lambda: any(
                    h.header("X-Service-Event") == "commitment.withdrawn" for h in receiver.hits
                ),
                what="the withdrawal at the receiver",
            )
            delivery = wait_until(
                lambda: WebhookDelivery.objects.filter(
                    commitment=commitment,
                    event_name="commitment.withdrawn",
                    status=WebhookDeliveryStatus.DELIVERED,
                ).first(),
                what="the delivery recorded",
            )
            # The other endpoint's withdrawal was dispatched too, and made nothing.
            wait_until(
                lambda: (
                    not Commitment.objects.filter(
                        pk=theirs.pk, events__dispatched_at__isnull=True
                    ).exists()
                ),
                what="the other withdrawal dispatched",
            )

    [hit] = [h for h in receiver.hits if h.header("X-Service-Event") == "commitment.withdrawn"]
    commitment = Commitment.objects.get(pk=commitment.pk)
    stamp = iso_millis(commitment.withdrawn_at)
    assert (
        hit.body
        == (
            '{"event":"commitment.withdrawn",'
            f'"id":"{commitment.pk}",'
            '"externalSystem":"jira","externalId":"OPS-42",'
            '"previousStatus":"Active","newStatus":"Withdrawn",'
            f'"withdrawnAt":"{stamp}",'
            f'"actor":{{"kind":"user","userId":"{assigner.pk}"}},'
            f'"timestamp":"{stamp}"}}'
        ).encode()
    )
    assert b"Not needed" not in hit.body
    assert hit.header("X-Service-Delivery") == str(delivery.pk)
    expected = "sha256=" + hmac.new(secret.encode(), hit.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, hit.header("X-Service-Signature"))
    assert standardwebhooks.Webhook(secret).verify(hit.body, hit.headers)["newStatus"] == (
        "Withdrawn"
    )
    assert [h.header("X-Service-Event") for h in four_only.hits] == ["commitment.activated"]
    assert not WebhookDelivery.objects.filter(commitment=theirs, event_name="commitment.withdrawn")
    assert endpoint.deliveries.count() == 2


@pytest.mark.postgres
@pytest.mark.redis
def test_a_line_to_one_endpoint_goes_in_one_task_that_claims_its_next_runs(
    tmp_path, env, receiver, assigner
):
    # One message of 20 for a line of 45: the task sends its 20, then claims
    # the line's next runs itself (webhooks.sending.LINE_RUNS): no other
    # task, each delivery once, in the order they were made.
    endpoint = webhook_endpoint_create(user=assigner, external_system="jira", url=receiver.url)[0]
    rows = line(endpoint, 45)
    log = tmp_path / "webhooks.log"
    with webhook_worker(env, log) as hooks:
        hooks.wait_for_output("ready.")
        dispatch.webhooks_publish([row.pk for row in rows[:20]])
        receiver.wait_for_hits(45)
        wait_until(
            lambda: (
                WebhookDelivery.objects.filter(status=WebhookDeliveryStatus.DELIVERED).count() == 45
            )
        )
    assert ids_of(receiver.hits) == [str(row.pk) for row in rows]
    received = [entry for entry in log.read_text().splitlines() if "received" in entry]
    assert len(received) == 1 and "deliver_webhooks" in received[0]
