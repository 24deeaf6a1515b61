"""The outbox dispatcher, called directly: events become deliveries once,
deliveries are claimed, sent, retried with back-off, fall back to e-mail, and
the sweep picks up what was never queued."""

from __future__ import annotations

import ast
import contextlib
import datetime as dt
import threading

import pytest
from django.core import mail
from django.db import connections
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import EventKind, OutboxEvent
from notifications import sending
from notifications.models import (
    AttemptOutcome,
    ChannelKind,
    NudgeChannel,
    NudgeDelivery,
    NudgeDeliveryStatus,
)
from notifications.services import notification_channel_set
from relay import outbox
from tests.harness.concurrency import race
from tests.harness.services import FakeService, Reply

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    settings.NOTIFY_HTTP_TIMEOUT = 2
    settings.SITE_URL = "https://commitments.example.com"
    settings.OUTBOX_SWEEP_GRACE = 10
    settings.OUTBOX_REQUEUE_AFTER = 120
    settings.DELIVERY_LEASE_SECONDS = 120
    settings.DELIVERY_MAX_ATTEMPTS = 10
    mail.outbox = []
    empty_the_queues()


def empty_the_queues() -> None:
    """The relay queues nothing again while dispatches wait in the broker
    (relay.outbox.dispatches_waiting): messages earlier tests published, which
    no worker took, would hold up this test's relay and sweep."""
    from celery import current_app
    from kombu.exceptions import ChannelError

    with current_app.connection_or_acquire() as conn:
        for queue in ("celery", "nudges", "webhooks"):
            with contextlib.suppress(ChannelError):  # never declared: empty
                conn.default_channel.queue_purge(queue)


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """Run what the code under test defers to after commit (the test's own
    transaction never commits)."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def slack():
    with FakeService() as fake:
        yield fake


def create_pending(assigner, assignee, **extra):
    extra.setdefault("description", "Ship the quarterly report")
    extra.setdefault("deadline", dt.datetime(2030, 3, 1, 17, 0, tzinfo=dt.UTC))
    return services.commitment_create_pending(
        actor=Actor.for_user(assigner), assigner=assigner, assignee=assignee, **extra
    )


def event_of(commitment, kind=EventKind.HANDSHAKE_REQUESTED) -> OutboxEvent:
    return OutboxEvent.objects.get(commitment=commitment, kind=kind)


def dispatch_and_get(event) -> NudgeDelivery:
    (delivery_id,) = outbox.outbox_event_dispatch(event_id=event.pk)
    return NudgeDelivery.objects.get(pk=delivery_id)


def make_due(delivery: NudgeDelivery) -> None:
    NudgeDelivery.objects.filter(pk=delivery.pk).update(
        next_attempt_at=timezone.now() - dt.timedelta(seconds=1)
    )


# --- relay (relay/listener.py runs outbox_relay; tests/relay/test_listener.py) ---


def test_a_transition_leaves_its_event_to_the_relay(
    assigner, assignee, published, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        commitment = create_pending(assigner, assignee)
    assert callbacks == []  # nothing runs after the commit on the request's path
    assert published == []
    event = event_of(commitment)

    assert outbox.outbox_relay() == 1
    assert published == [("dispatch_event", str(event.pk))]
    assert outbox.outbox_relay() == 0  # queued: not again before OUTBOX_REQUEUE_AFTER
    assert published == [("dispatch_event", str(event.pk))]
    # What that task does: dispatch the event, once.
    assert outbox.outbox_event_dispatch(event_id=event.pk)
    event.refresh_from_db()
    assert event.dispatched_at is not None
    assert outbox.outbox_event_dispatch(event_id=event.pk) == []


def test_a_rolled_back_transition_leaves_nothing_to_relay(assigner, assignee, published):
    from django.db import transaction

    try:
        with transaction.atomic():
            create_pending(assigner, assignee)
            raise RuntimeError("the caller gives up")
    except RuntimeError:
        pass
    assert not OutboxEvent.objects.exists()
    assert outbox.outbox_relay() == 0
    assert published == []


def test_the_relay_leaves_an_event_whose_back_off_is_not_over(assigner, assignee, published):
    event = event_of(create_pending(assigner, assignee))
    later = timezone.now() + dt.timedelta(seconds=30)
    OutboxEvent.objects.filter(pk=event.pk).update(next_attempt_at=later)
    assert outbox.outbox_relay() == 0
    assert outbox.outbox_relay(now=later) == 1
    assert published == [("dispatch_event", str(event.pk))]


def test_a_broker_that_refuses_the_relay_loses_nothing(assigner, assignee, monkeypatch):
    from celery import current_app
    from kombu.exceptions import OperationalError

    def broker_down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    first = event_of(create_pending(assigner, assignee))
    second = event_of(create_pending(assigner, assignee, description="Second"))
    monkeypatch.setattr(current_app, "send_task", broker_down)
    assert outbox.outbox_relay() == 0  # no exception reaches the relay's loop
    for event in (first, second):
        event.refresh_from_db()
        assert event.dispatched_at is None
        assert event.next_attempt_at <= timezone.now()  # due again at once

    # The broker is back: the relay's next look queues both.
    sent = []
    monkeypatch.setattr(current_app, "send_task", lambda name, args, **kw: sent.append(args))
    assert outbox.outbox_relay() == 2
    # Due together, they go as one batch task, each with its request's id.
    (batch,) = sent
    assert sorted(batch[0]) == sorted([[first.pk, ""], [second.pk, ""]])


def test_an_inbox_request_leaves_its_event_to_the_relay(
    client, assigner, assignee, published, committed
):
    from tests.harness.api import INBOX, inbox_body, mint, post_json

    token = mint(assigner)
    with committed():
        response = post_json(client, INBOX, inbox_body(), token=token)
    assert response.status_code == 201
    assert published == []
    event = OutboxEvent.objects.get(commitment_id=response.json()["id"])
    assert outbox.outbox_relay() == 1
    assert published == [("dispatch_event", str(event.pk))]


def test_the_relay_queues_an_event_under_the_id_of_the_request_that_made_it(
    client, assigner, assignee, monkeypatch
):
    from lib import jobs
    from lib.logs import request_id_var
    from tests.harness.api import INBOX, inbox_body, mint, post_json

    seen = []

    def enqueue(task, arg, *, retry=True):
        seen.append((arg, request_id_var.get()))
        return True

    monkeypatch.setattr(jobs, "enqueue", enqueue)
    token = mint(assigner)
    response = post_json(
        client, INBOX, inbox_body(), token=token, **{"X-Request-ID": "req-inbox-42"}
    )
    assert response.status_code == 201
    event = OutboxEvent.objects.get(commitment_id=response.json()["id"])
    assert event.request_id == "req-inbox-42"
    # A change outside any request keeps none.
    other = event_of(create_pending(assigner, assignee, description="No request"))
    assert other.request_id == ""

    assert outbox.outbox_relay() == 2
    # One batch (due together) that carries each event's request id; the
    # batch task dispatches each under its own (outbox_events_dispatch).
    ((pairs, _),) = seen
    assert sorted(pairs, key=str) == sorted([[event.pk, "req-inbox-42"], [other.pk, ""]], key=str)
    assert request_id_var.get() is None  # the relay's own context is left as it was


def test_requests_that_wrote_no_event_leave_nothing_to_relay(
    client, assigner, assignee, published, committed
):
    from tests.harness.api import INBOX, inbox_body, mint, post_json

    token = mint(assigner)
    with committed():
        assert client.get("/settings/notifications/").status_code == 302
        refused = post_json(
            client, INBOX, inbox_body(assigneeEmail="nobody@example.com"), token=token
        )
        assert refused.status_code == 400
        client.force_login(assignee)
        assert client.post("/settings/notifications/", {"kind": "email"}).status_code == 302
    assert not OutboxEvent.objects.exists()
    assert outbox.outbox_relay() == 0
    assert published == []


# --- dispatch -----------------------------------------------------------------------


def test_an_inbox_creation_nudges_the_assignee_once(assigner, assignee, published, committed):
    commitment = create_pending(assigner, assignee)
    event = event_of(commitment)
    with committed():
        delivery = dispatch_and_get(event)
    assert delivery.recipient == assignee
    assert delivery.channel == ChannelKind.EMAIL
    assert delivery.status == NudgeDeliveryStatus.PENDING
    event.refresh_from_db()
    assert event.dispatched_at is not None
    assert event.dispatch_attempts == 1
    assert outbox.outbox_event_dispatch(event_id=event.pk) == []  # a second run: nothing
    assert NudgeDelivery.objects.count() == 1
    assert published == [("deliver_nudge", str(delivery.pk))]


def test_a_nudge_is_planned_on_the_channel_the_recipient_chose(
    assigner, assignee, published, slack
):
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    delivery = dispatch_and_get(event_of(create_pending(assigner, assignee)))
    assert delivery.channel == ChannelKind.SLACK


def test_answers_and_completion_tell_the_assigner_and_renegotiation_the_assignee(
    assigner, assignee, published
):
    accepted = create_pending(assigner, assignee, external_system="jira", external_id="1")
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=accepted.pk)
    services.commitment_complete(actor=Actor.for_user(assignee), commitment_id=accepted.pk)
    declined = create_pending(assigner, assignee)
    services.commitment_decline(actor=Actor.for_user(assignee), commitment_id=declined.pk)
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=declined.pk, description="Ship it by May"
    )
    recipients = {}
    for event in OutboxEvent.objects.all():
        ids = outbox.outbox_event_dispatch(event_id=event.pk)
        recipients[(event.commitment_id, event.kind)] = [
            NudgeDelivery.objects.get(pk=i).recipient for i in ids
        ]
    assert recipients == {
        (accepted.pk, EventKind.HANDSHAKE_REQUESTED): [assignee],
        (accepted.pk, EventKind.ACTIVATED): [assigner],
        (accepted.pk, EventKind.COMPLETED): [assigner],
        (declined.pk, EventKind.HANDSHAKE_REQUESTED): [assignee],
        (declined.pk, EventKind.REFUSED): [assigner],
        (declined.pk, EventKind.RENEGOTIATED): [assignee],
    }


def test_nobody_is_nudged_about_their_own_act(assigner, assignee, published):
    commitment = create_pending(assigner, assignee)
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    services.commitment_complete(actor=Actor.for_user(assigner), commitment_id=commitment.pk)
    completed = event_of(commitment, EventKind.COMPLETED)
    assert outbox.outbox_event_dispatch(event_id=completed.pk) == []
    completed.refresh_from_db()
    assert completed.dispatched_at is not None


@pytest.mark.postgres
def test_two_workers_dispatching_the_same_event_at_once_create_one_delivery(
    assigner, assignee, published
):
    event = event_of(create_pending(assigner, assignee))
    results = race([lambda: outbox.outbox_event_dispatch(event_id=event.pk)] * 4)
    assert sorted(len(r) for r in results) == [0, 0, 0, 1]
    assert NudgeDelivery.objects.filter(event=event).count() == 1


# --- delivery -----------------------------------------------------------------------


def test_a_nudge_by_email_says_who_asks_what_by_when_in_the_recipients_time_zone(
    assigner, assignee, published
):
    assignee.timezone = "Europe/Paris"
    assignee.save()
    commitment = create_pending(assigner, assignee)
    delivery = dispatch_and_get(event_of(commitment))
    assert sending.nudge_send(delivery_id=delivery.pk) == AttemptOutcome.DELIVERED
    (sent,) = mail.outbox
    assert sent.to == ["knight@example.com"]
    assert sent.subject == "Lead asks you: Ship the quarterly report"
    assert "Lead asks you to: Ship the quarterly report" in sent.body
    assert "Fri 1 Mar 2030, 18:00 (Europe/Paris)" in sent.body  # 17:00 UTC
    assert f"https://commitments.example.com/commitments/{commitment.pk}" in sent.body
    delivery.refresh_from_db()
    assert delivery.status == NudgeDeliveryStatus.DELIVERED
    assert delivery.delivered_at is not None
    (attempt,) = delivery.attempt_log.all()
    assert attempt.outcome == AttemptOutcome.DELIVERED
    assert attempt.channel == ChannelKind.EMAIL
    assert attempt.duration_ms is not None


def test_a_delivered_nudge_is_not_sent_again_when_its_task_runs_twice(
    assigner, assignee, published
):
    delivery = dispatch_and_get(event_of(create_pending(assigner, assignee)))
    sending.nudge_send(delivery_id=delivery.pk)
    assert sending.nudge_send(delivery_id=delivery.pk) is None
    assert len(mail.outbox) == 1
    assert delivery.attempt_log.count() == 1


def test_a_slack_nudge_posts_to_the_saved_webhook(assigner, assignee, published, slack):
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    delivery = dispatch_and_get(event_of(create_pending(assigner, assignee)))
    assert sending.nudge_send(delivery_id=delivery.pk) == AttemptOutcome.DELIVERED
    (request,) = slack.requests
    assert "Lead asks you to: Ship the quarterly report" in request.body["text"]
    assert mail.outbox == []
    assert delivery.attempt_log.get().status_code == 200


def test_transient_failures_back_off_longer_each_time(assigner, assignee, published, slack):
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    slack.default = Reply(503, "service_unavailable")
    delivery = dispatch_and_get(event_of(create_pending(assigner, assignee)))
    waits = []
    for _ in range(4):
        before = timezone.now()
        assert sending.nudge_send(delivery_id=delivery.pk) == AttemptOutcome.TRANSIENT
        delivery.refresh_from_db()
        assert delivery.status == NudgeDeliveryStatus.PENDING
        assert "503" in delivery.last_error
        waits.append((delivery.next_attempt_at - before).total_seconds())
        # Not due yet: a duplicate task does nothing.
        assert sending.nudge_send(delivery_id=delivery.pk) is None
        make_due(delivery)
    assert waits == sorted(waits) and len(set(waits)) == 4
    assert waits[0] >= sending.BACKOFF_BASE * 0.75
    assert len(slack.requests) == 4
    assert [a.outcome for a in delivery.attempt_log.all()] == [AttemptOutcome.TRANSIENT] * 4


def test_retry_after_from_the_service_is_respected(assigner, assignee, published, slack):
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    slack.reply_with(Reply(429, "rate_limited", headers={"Retry-After": "600"}))
    delivery = dispatch_and_get(event_of(create_pending(assigner, assignee)))
    before = timezone.now()
    sending.nudge_send(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.next_attempt_at - before).total_seconds() >= 600


def test_a_permanent_failure_marks_the_channel_broken_and_falls_back_to_email(
    assigner, assignee, published, slack, committed
):
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    slack.default = Reply(404, "no_service")
    delivery = dispatch_and_get(event_of(create_pending(assigner, assignee)))
    published.clear()

    with committed():
        assert sending.nudge_send(delivery_id=delivery.pk) == AttemptOutcome.PERMANENT
    channel = NudgeChannel.objects.get(user=assignee)
    assert channel.is_broken
    assert "404 no_service" in channel.broken_reason
    delivery.refresh_from_db()
    assert delivery.channel == ChannelKind.EMAIL
    assert delivery.status == NudgeDeliveryStatus.PENDING
    assert published == [("deliver_nudge", str(delivery.pk))]  # the fallback goes at once

    assert sending.nudge_send(delivery_id=delivery.pk) == AttemptOutcome.DELIVERED
    assert len(slack.requests) == 1  # no retries against a dead webhook
    assert mail.outbox[0].to == ["knight@example.com"]
    assert [(a.channel, a.outcome) for a in delivery.attempt_log.all()] == [
        (ChannelKind.SLACK, AttemptOutcome.PERMANENT),
        (ChannelKind.EMAIL, AttemptOutcome.DELIVERED),
    ]


def test_later_nudges_skip_a_broken_channel_until_it_is_saved_again(
    assigner, assignee, published, slack
):
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    slack.default = Reply(410, "channel_is_archived")
    first = dispatch_and_get(event_of(create_pending(assigner, assignee)))
    sending.nudge_send(delivery_id=first.pk)
    second = dispatch_and_get(
        event_of(create_pending(assigner, assignee, description="And the annual one"))
    )
    assert second.channel == ChannelKind.EMAIL
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    third = dispatch_and_get(
        event_of(create_pending(assigner, assignee, description="And the monthly one"))
    )
    assert third.channel == ChannelKind.SLACK


def test_a_chat_channel_that_keeps_failing_falls_back_to_email_without_being_marked_broken(
    assigner, assignee, published, slack, settings
):
    settings.DELIVERY_MAX_ATTEMPTS = 2
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
    slack.default = Reply(500, "rollup_error")
    delivery = dispatch_and_get(event_of(create_pending(assigner, assignee)))
    sending.nudge_send(delivery_id=delivery.pk)
    make_due(delivery)
    sending.nudge_send(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert delivery.channel == ChannelKind.EMAIL
    assert delivery.attempts == 0
    assert not NudgeChannel.objects.get(user=assignee).is_broken
    assert sending.nudge_send(delivery_id=delivery.pk) == AttemptOutcome.DELIVERED


def test_email_that_keeps_failing_ends_failed(assigner, assignee, published, settings):
    settings.DELIVERY_MAX_ATTEMPTS = 2
    settings.EMAIL_BACKEND = "tests.notifications.test_transports.DownBackend"
    delivery = dispatch_and_get(event_of(create_pending(assigner, assignee)))
    sending.nudge_send(delivery_id=delivery.pk)
    make_due(delivery)
    sending.nudge_send(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == NudgeDeliveryStatus.FAILED
    assert "Connection refused" in delivery.last_error
    make_due(delivery)
    assert sending.nudge_send(delivery_id=delivery.pk) is None


class WorkerKilled(BaseException):
    """Stands for a worker killed mid-send: nothing after it runs."""


def expire_lease(delivery) -> None:
    NudgeDelivery.objects.filter(pk=delivery.pk).update(
        claimed_until=timezone.now() - dt.timedelta(seconds=1)
    )


def test_a_delivery_whose_worker_died_is_claimed_again_once_its_lease_runs_out(
    assigner, assignee, published, monkeypatch
):
    delivery = dispatch_and_get(event_of(create_pending(assigner, assignee)))
    real_transport_for = sending.transport_for

    def killed(kind, address):
        raise WorkerKilled

    monkeypatch.setattr(sending, "transport_for", killed)
    with pytest.raises(WorkerKilled):
        sending.nudge_send(delivery_id=delivery.pk)
    monkeypatch.setattr(sending, "transport_for", real_transport_for)

    assert sending.nudge_send(delivery_id=delivery.pk) is None  # lease still running
    expire_lease(delivery)
    assert sending.nudge_send(delivery_id=delivery.pk) == AttemptOutcome.DELIVERED
    assert len(mail.outbox) == 1
    assert [a.outcome for a in delivery.attempt_log.all()] == [
        AttemptOutcome.INTERRUPTED,
        AttemptOutcome.DELIVERED,
    ]


class HeldSend:
    """A transport whose send waits to be let go, then fails or succeeds."""

    def __init__(self, fail: bool) -> None:
        self.fail = fail
        self.sending, self.let_go = threading.Event(), threading.Event()

    def notify(self, message) -> int:
        from notifications.transports import TransportError

        self.sending.set()
        assert self.let_go.wait(timeout=30)
        if self.fail:
            raise TransportError("late timeout")
        return 200


@pytest.mark.django_db(transaction=True)
def test_a_stale_worker_cannot_reschedule_a_delivery_someone_else_claimed(
    assigner, assignee, published, monkeypatch
):
    """Worker A's send outlives its lease; worker B claims the row and is
    sending it when A's failure arrives: A changes nothing, B's send stands."""
    delivery = dispatch_and_get(event_of(create_pending(assigner, assignee)))
    a, b = HeldSend(fail=True), HeldSend(fail=False)
    transports = iter([a, b])
    monkeypatch.setattr(sending, "transport_for", lambda kind, address: next(transports))
    outcomes: dict[str, object] = {}

    def worker(name: str) -> None:
        try:
            outcomes[name] = sending.nudge_send(delivery_id=delivery.pk)
        finally:
            connections.close_all()

    thread_a = threading.Thread(target=worker, args=("a",))
    thread_a.start()
    assert a.sending.wait(timeout=30)
    expire_lease(delivery)
    thread_b = threading.Thread(target=worker, args=("b",))
    thread_b.start()
    assert b.sending.wait(timeout=30)

    a.let_go.set()  # A's late failure, while B holds the row
    thread_a.join(timeout=30)
    delivery.refresh_from_db()
    assert outcomes["a"] == AttemptOutcome.TRANSIENT
    assert delivery.status == NudgeDeliveryStatus.SENDING  # still B's
    assert delivery.claimed_until > timezone.now()

    b.let_go.set()
    thread_b.join(timeout=30)
    delivery.refresh_from_db()
    assert outcomes["b"] == AttemptOutcome.DELIVERED
    assert delivery.status == NudgeDeliveryStatus.DELIVERED


def test_admin_retry_sends_a_failed_delivery_again(assigner, assignee, published):
    delivery = dispatch_and_get(event_of(create_pending(assigner, assignee)))
    NudgeDelivery.objects.filter(pk=delivery.pk).update(
        status=NudgeDeliveryStatus.FAILED, attempts=10
    )
    assert sending.delivery_retry(delivery_id=delivery.pk) is True
    assert sending.nudge_send(delivery_id=delivery.pk) == AttemptOutcome.DELIVERED
    assert sending.delivery_retry(delivery_id=delivery.pk) is False  # delivered stays so


# --- sweep --------------------------------------------------------------------------


def test_the_sweep_queues_events_nobody_queued_once_the_grace_is_over(
    assigner, assignee, published, committed
):
    event = event_of(create_pending(assigner, assignee))
    assert outbox.outbox_sweep().events == 0  # just written: its own publish is on the way
    later = timezone.now() + dt.timedelta(seconds=11)
    with committed():
        assert outbox.outbox_sweep(now=later).events == 1
    assert published == [("dispatch_event", str(event.pk))]
    # Queued: not again until OUTBOX_REQUEUE_AFTER, in case that message is lost too.
    assert outbox.outbox_sweep(now=later + dt.timedelta(seconds=60)).events == 0
    assert outbox.outbox_sweep(now=later + dt.timedelta(seconds=131)).events == 1


def test_the_sweep_leaves_dispatched_events_alone(assigner, assignee, published, committed):
    event = event_of(create_pending(assigner, assignee))
    outbox.outbox_event_dispatch(event_id=event.pk)
    published.clear()
    with committed():
        result = outbox.outbox_sweep(now=timezone.now() + dt.timedelta(seconds=11))
    assert result.events == 0
    assert published == []


def test_the_sweep_queues_due_retries_and_expired_leases_but_not_live_ones(
    assigner, assignee, published, committed
):
    now = timezone.now()
    retry = dispatch_and_get(event_of(create_pending(assigner, assignee)))
    NudgeDelivery.objects.filter(pk=retry.pk).update(
        next_attempt_at=now - dt.timedelta(seconds=1), enqueued_at=None
    )
    waiting = dispatch_and_get(event_of(create_pending(assigner, assignee, description="b")))
    NudgeDelivery.objects.filter(pk=waiting.pk).update(
        next_attempt_at=now + dt.timedelta(minutes=5), enqueued_at=None
    )
    dead = dispatch_and_get(event_of(create_pending(assigner, assignee, description="c")))
    NudgeDelivery.objects.filter(pk=dead.pk).update(
        status=NudgeDeliveryStatus.SENDING, claimed_until=now - dt.timedelta(seconds=1)
    )
    alive = dispatch_and_get(event_of(create_pending(assigner, assignee, description="d")))
    NudgeDelivery.objects.filter(pk=alive.pk).update(
        status=NudgeDeliveryStatus.SENDING, claimed_until=now + dt.timedelta(minutes=10)
    )
    fresh = dispatch_and_get(event_of(create_pending(assigner, assignee, description="e")))
    published.clear()

    with committed():
        result = outbox.outbox_sweep(now=now + dt.timedelta(seconds=130))
    # Several due at once go as a batch task: its ids, each.
    queued = set()
    for _, arg in published:
        queued |= set(ast.literal_eval(arg)) if arg.startswith("[") else {arg}
    # `dead` was queued at dispatch long enough ago; `fresh` too, by now.
    assert str(retry.pk) in queued and str(dead.pk) in queued
    assert str(waiting.pk) not in queued
    assert str(alive.pk) not in queued
    assert result.deliveries == len(queued)
    # Right after the dispatch, `fresh` had just been queued and was left alone.
    published.clear()
    NudgeDelivery.objects.filter(pk=fresh.pk).update(enqueued_at=timezone.now())
    with committed():
        outbox.outbox_sweep()
    assert str(fresh.pk) not in {row_id for _, row_id in published}
