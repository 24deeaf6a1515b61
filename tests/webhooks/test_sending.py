"""Sending with a clock the test controls: the retry schedule (5 s, 5 min,
30 min, 2 h, 5 h, 10 h, ±10 %, a last attempt at 24 hours), one delivery id
throughout, Retry-After, 410 Gone, replay, response excerpts, and what an
unreadable secret or a paused endpoint does."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
import standardwebhooks

from audit.models import AuditEvent
from audit.services import Actor
from relay.outbox import outbox_sweep
from tests.harness.services import Reply
from tests.harness.webhooks import dispatch_all, install_clock, mapped_active
from webhooks import sending
from webhooks.errors import WebhookEndpointPaused, WebhookNotReplayable
from webhooks.models import (
    LOST_SECRET_REASON,
    LOST_URL_REASON,
    AttemptOutcome,
    WebhookDelivery,
    WebhookDeliveryStatus,
)
from webhooks.schedule import next_attempt_at
from webhooks.services import (
    webhook_delivery_replay,
    webhook_endpoint_resume,
    webhook_endpoint_rotate_secret,
    webhook_endpoint_update,
)
from webhooks.transport import Outcome

pytestmark = pytest.mark.django_db

SCHEDULE = [5, 300, 1800, 7200, 18000, 36000]


def make_delivery(assigner, assignee, **kwargs) -> WebhookDelivery:
    """The activation's delivery of a new mapped commitment."""
    commitment = mapped_active(assigner, assignee, **kwargs)
    dispatch_all()
    return WebhookDelivery.objects.get(commitment=commitment)


def run_due(clock, delivery) -> str | None:
    """Move the clock to when the delivery is due, let the sweep find it,
    and send it as the worker would."""
    delivery.refresh_from_db()
    clock.advance_to(delivery.next_attempt_at)
    result = outbox_sweep(now=clock.now)
    assert result.webhooks == 1
    return sending.webhook_send(delivery_id=delivery.pk)


def test_five_failures_then_success_keeps_the_id_and_follows_the_schedule(
    monkeypatch, published, receiver, endpoint, assigner, assignee
):
    clock = install_clock(monkeypatch)
    delivery = make_delivery(assigner, assignee)
    receiver.reply_with(*[Reply(500, "down")] * 5)

    assert sending.webhook_send(delivery_id=delivery.pk) == "failed"  # at once
    sent_at = [clock.now]
    for _ in range(4):
        assert run_due(clock, delivery) == "failed"
        sent_at.append(clock.now)
    assert run_due(clock, delivery) == "delivered"
    sent_at.append(clock.now)

    delivery.refresh_from_db()
    assert delivery.status == WebhookDeliveryStatus.DELIVERED
    assert delivery.attempts == 6
    assert {h.header("X-Service-Delivery") for h in receiver.hits} == {str(delivery.pk)}
    assert {h.header("webhook-id") for h in receiver.hits} == {str(delivery.pk)}
    assert len({h.body for h in receiver.hits}) == 1
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(sent_at)]
    for gap, nominal in zip(gaps, SCHEDULE, strict=False):
        assert nominal * 0.9 <= gap <= nominal * 1.1, (gaps, SCHEDULE)
    attempts = list(delivery.attempt_log.all())
    assert [a.outcome for a in attempts] == [AttemptOutcome.FAILED] * 5 + [AttemptOutcome.DELIVERED]
    assert [a.status_code for a in attempts] == [500] * 5 + [200]
    assert attempts[0].response_excerpt == "down"
    assert delivery.last_status_code == 200


def test_the_gaps_are_the_settings_schedule_and_the_last_attempt_stays_at_24_hours(settings):
    """The schedule is a setting (the fault run's settings make it seconds,
    benchmarks/faults_settings.py), read at each failure."""
    settings.WEBHOOK_RETRY_SCHEDULE = (2, 4)
    first = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)

    for attempts, nominal in ((1, 2), (2, 4)):
        due = next_attempt_at(attempts=attempts, first_attempt_at=first, now=first)
        assert nominal * 0.9 <= (due - first).total_seconds() <= nominal * 1.1
    assert next_attempt_at(attempts=3, first_attempt_at=first, now=first) == first + dt.timedelta(
        seconds=settings.WEBHOOK_RETRY_WINDOW
    )


def test_a_receiver_that_never_succeeds_fails_after_24_hours_and_replay_delivers(
    monkeypatch, published, receiver, endpoint, secret, assigner, assignee
):
    clock = install_clock(monkeypatch)
    delivery = make_delivery(assigner, assignee)
    receiver.default = Reply(502, "bad gateway")

    first = clock.now
    assert sending.webhook_send(delivery_id=delivery.pk) == "failed"
    sent_at = [first]
    while True:
        delivery.refresh_from_db()
        if delivery.status == WebhookDeliveryStatus.FAILED:
            break
        assert run_due(clock, delivery) == "failed"
        sent_at.append(clock.now)

    # Seven attempts on the schedule, then one last when 24 hours have passed.
    assert len(sent_at) == 8
    assert sent_at[-1] == first + dt.timedelta(hours=24)
    assert delivery.failed_at == sent_at[-1]
    assert delivery.last_status_code == 502
    assert delivery.is_replayable
    assert outbox_sweep(now=clock.now + dt.timedelta(days=3)).webhooks == 0

    # Replay: the same id, signed with the secret of now, a new window.
    new_secret = webhook_endpoint_rotate_secret(endpoint=endpoint, now=clock.now)
    clock.advance(hours=30)  # the rotation's overlap is over: only the new secret
    receiver.default = Reply(200, "ok")
    replayed = webhook_delivery_replay(delivery=delivery, actor=Actor.for_user(assigner))
    assert replayed.pk == delivery.pk
    assert replayed.status == WebhookDeliveryStatus.PENDING
    assert replayed.first_attempt_at is None and replayed.attempts == 0
    assert ("deliver_webhook", str(delivery.pk)) not in published  # after commit
    assert AuditEvent.objects.filter(action="webhook_delivery_replayed").count() == 1

    assert sending.webhook_send(delivery_id=delivery.pk) == "delivered"
    delivery.refresh_from_db()
    assert delivery.status == WebhookDeliveryStatus.DELIVERED
    assert delivery.first_attempt_at == clock.now
    hit = receiver.hits[-1]
    assert hit.header("X-Service-Delivery") == str(delivery.pk)
    assert hit.header("X-Service-Signature").count("sha256=") == 1
    wh = standardwebhooks.Webhook(new_secret)
    # Signed at the test's clock: check the signature itself, not its age.
    expected = wh.sign(
        msg_id=str(delivery.pk),
        timestamp=dt.datetime.fromtimestamp(int(hit.header("webhook-timestamp")), tz=dt.UTC),
        data=hit.body.decode(),
    )
    assert hit.header("webhook-signature") == expected


def test_only_a_failed_delivery_is_replayed(
    monkeypatch, published, receiver, endpoint, assigner, assignee
):
    delivery = make_delivery(assigner, assignee)
    with pytest.raises(WebhookNotReplayable):
        webhook_delivery_replay(delivery=delivery, actor=Actor.for_user(assigner))


def test_retry_after_longer_than_the_gap_is_honoured_inside_24_hours(
    monkeypatch, published, receiver, endpoint, assigner, assignee
):
    clock = install_clock(monkeypatch)
    delivery = make_delivery(assigner, assignee)
    receiver.reply_with(
        Reply(503, "busy", headers={"Retry-After": "120"}),
        Reply(429, "slow down", headers={"Retry-After": "10"}),  # shorter than 5 min
        Reply(429, "slow down", headers={"Retry-After": str(30 * 3600)}),  # past 24 h
    )

    sending.webhook_send(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert delivery.next_attempt_at == clock.now + dt.timedelta(seconds=120)

    run_due(clock, delivery)
    delivery.refresh_from_db()
    gap = (delivery.next_attempt_at - clock.now).total_seconds()
    assert 270 <= gap <= 330

    run_due(clock, delivery)
    delivery.refresh_from_db()
    gap = (delivery.next_attempt_at - clock.now).total_seconds()
    assert 1620 <= gap <= 1980


def test_retry_after_on_another_status_is_ignored(
    monkeypatch, published, receiver, endpoint, assigner, assignee
):
    clock = install_clock(monkeypatch)
    delivery = make_delivery(assigner, assignee)
    receiver.reply_with(Reply(500, "no", headers={"Retry-After": "600"}))
    sending.webhook_send(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.next_attempt_at - clock.now).total_seconds() <= 5.5


def test_410_gone_fails_the_delivery_and_pauses_the_endpoint(
    monkeypatch, published, receiver, endpoint, assigner, assignee
):
    install_clock(monkeypatch)
    delivery = make_delivery(assigner, assignee)
    receiver.reply_with(Reply(410, "gone"))

    assert sending.webhook_send(delivery_id=delivery.pk) == "failed"

    delivery.refresh_from_db()
    endpoint.refresh_from_db()
    assert delivery.status == WebhookDeliveryStatus.FAILED
    assert delivery.last_status_code == 410
    assert endpoint.is_paused
    assert "410 Gone" in endpoint.paused_reason
    assert endpoint.problem == endpoint.paused_reason
    paused = AuditEvent.objects.get(action="webhook_endpoint_paused")
    assert paused.actor_kind == "system"
    # Nothing more is made for it, and a replay waits for a resume.
    mapped_active(assigner, assignee, external_id="OPS-43")
    dispatch_all()
    assert WebhookDelivery.objects.count() == 1
    with pytest.raises(WebhookEndpointPaused):
        webhook_delivery_replay(delivery=delivery, actor=Actor.for_user(assigner))
    webhook_endpoint_resume(endpoint=endpoint)
    webhook_delivery_replay(delivery=delivery, actor=Actor.for_user(assigner))
    assert sending.webhook_send(delivery_id=delivery.pk) == "delivered"


def test_a_delivery_due_while_its_endpoint_is_paused_fails_without_a_request(
    monkeypatch, published, receiver, endpoint, assigner, assignee
):
    from webhooks.services import webhook_endpoint_pause

    delivery = make_delivery(assigner, assignee)
    webhook_endpoint_pause(endpoint=endpoint)
    assert sending.webhook_send(delivery_id=delivery.pk) is None
    delivery.refresh_from_db()
    assert delivery.status == WebhookDeliveryStatus.FAILED
    assert "paused" in delivery.last_error
    assert receiver.hits == []


def test_a_refused_connection_and_a_timeout_are_retried(
    monkeypatch, published, endpoint, assigner, assignee, settings
):
    from tests.harness.services import free_port

    clock = install_clock(monkeypatch)
    endpoint.url = f"http://127.0.0.1:{free_port()}/nobody"  # nothing listens there
    endpoint.save()
    delivery = make_delivery(assigner, assignee)
    assert sending.webhook_send(delivery_id=delivery.pk) == "failed"
    delivery.refresh_from_db()
    assert delivery.status == WebhookDeliveryStatus.PENDING
    assert delivery.last_status_code is None
    assert "Connection failed" in delivery.last_error
    assert delivery.next_attempt_at > clock.now


def test_only_the_first_kib_of_the_answer_is_kept(
    monkeypatch, published, receiver, endpoint, assigner, assignee
):
    delivery = make_delivery(assigner, assignee)
    receiver.reply_with(Reply(500, "x" * 5000))
    sending.webhook_send(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert delivery.last_response_excerpt == "x" * 1024
    assert delivery.attempt_log.get().response_excerpt == "x" * 1024


def test_an_unreadable_secret_pauses_the_endpoint_with_a_clear_reason(
    monkeypatch, published, receiver, endpoint, assigner, assignee, settings
):
    from cryptography.fernet import Fernet

    delivery = make_delivery(assigner, assignee)
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]  # the old key is gone

    assert sending.webhook_send(delivery_id=delivery.pk) is None

    delivery.refresh_from_db()
    endpoint.refresh_from_db()
    assert receiver.hits == []
    assert delivery.status == WebhookDeliveryStatus.FAILED
    assert endpoint.secret_lost
    assert endpoint.problem == LOST_SECRET_REASON
    assert endpoint.paused_reason == LOST_SECRET_REASON
    # Rotating gives a secret the current key can read, and resumes it. The
    # URL was encrypted under the lost key too: it is entered again.
    webhook_endpoint_rotate_secret(endpoint=endpoint)
    endpoint.refresh_from_db()
    assert endpoint.url_lost and endpoint.problem == LOST_URL_REASON
    webhook_endpoint_update(endpoint=endpoint, url=receiver.url)
    endpoint.refresh_from_db()
    assert not endpoint.is_broken
    webhook_delivery_replay(delivery=delivery, actor=Actor.for_user(assigner))
    assert sending.webhook_send(delivery_id=delivery.pk) == "delivered"


def test_a_worker_lost_mid_send_leaves_the_delivery_to_be_sent_again_with_the_same_id(
    monkeypatch, published, receiver, endpoint, assigner, assignee, settings
):
    clock = install_clock(monkeypatch)
    delivery = make_delivery(assigner, assignee)
    # A worker claims it and dies before recording anything.
    assert sending._claim(delivery.pk, clock.now) is not None
    assert sending.webhook_send(delivery_id=delivery.pk) is None  # leased: nobody else sends

    clock.advance(seconds=settings.DELIVERY_LEASE_SECONDS + 1)
    assert outbox_sweep(now=clock.now).webhooks == 1
    assert sending.webhook_send(delivery_id=delivery.pk) == "delivered"

    attempts = list(delivery.attempt_log.all())
    assert [a.outcome for a in attempts] == [AttemptOutcome.INTERRUPTED, AttemptOutcome.DELIVERED]
    assert receiver.hits[-1].header("X-Service-Delivery") == str(delivery.pk)


def test_a_stale_workers_failure_does_not_reschedule_a_row_claimed_since(
    monkeypatch, published, receiver, endpoint, assigner, assignee, settings
):
    clock = install_clock(monkeypatch)
    delivery = make_delivery(assigner, assignee)
    stale = sending._claim(delivery.pk, clock.now)
    clock.advance(seconds=settings.DELIVERY_LEASE_SECONDS + 1)
    assert sending.webhook_send(delivery_id=delivery.pk) == "delivered"

    sending._record(stale, Outcome(delivered=False, error="late"))

    delivery.refresh_from_db()
    assert delivery.status == WebhookDeliveryStatus.DELIVERED


def test_a_test_event_is_sent_once_and_never_retried(published, receiver, endpoint):
    from webhooks.services import webhook_test_send

    receiver.reply_with(Reply(500, "nope"))
    delivery = webhook_test_send(endpoint=endpoint)
    assert sending.webhook_send(delivery_id=delivery.pk) == "failed"
    delivery.refresh_from_db()
    assert delivery.status == WebhookDeliveryStatus.FAILED
    assert delivery.is_test and delivery.event is None and delivery.commitment is None


def test_a_test_event_answered_410_does_not_pause(published, receiver, endpoint):
    from webhooks.services import webhook_test_send

    receiver.reply_with(Reply(410, "gone"))
    delivery = webhook_test_send(endpoint=endpoint)
    sending.webhook_send(delivery_id=delivery.pk)
    endpoint.refresh_from_db()
    assert not endpoint.is_paused


def test_one_send_per_endpoint_is_in_flight_and_the_next_goes_when_it_ends(
    monkeypatch,
    published,
    receiver,
    endpoint,
    assigner,
    assignee,
    settings,
    make_user,
    django_capture_on_commit_callbacks,
):
    clock = install_clock(monkeypatch)
    first = make_delivery(assigner, assignee)
    second = make_delivery(assigner, assignee, external_id="OPS-43")
    other_user = make_user("other@example.com")
    from webhooks.services import webhook_endpoint_create

    webhook_endpoint_create(user=other_user, external_system="jira", url=receiver.url)
    elsewhere = make_delivery(other_user, assignee, external_id="OPS-44")

    in_flight = sending._claim(first.pk, clock.now)  # a worker is sending the first
    assert sending.webhook_send(delivery_id=second.pk) is None  # waits for its turn
    second.refresh_from_db()
    assert second.status == WebhookDeliveryStatus.PENDING
    assert second.next_attempt_at == clock.now + dt.timedelta(seconds=settings.WEBHOOK_TIMEOUT)
    assert sending.webhook_send(delivery_id=elsewhere.pk) == "delivered"  # not held up
    assert len(receiver.hits) == 1

    published.clear()
    with django_capture_on_commit_callbacks(execute=True):
        sending._record(in_flight, Outcome(delivered=True, status_code=200))
    assert ("deliver_webhook", str(second.pk)) in published  # its turn, at once
    second.refresh_from_db()
    assert second.next_attempt_at == clock.now
    assert sending.webhook_send(delivery_id=second.pk) == "delivered"
