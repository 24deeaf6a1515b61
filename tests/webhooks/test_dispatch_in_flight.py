"""A dispatch queues no task for a webhook whose endpoint has a send in
flight (issue 29): the delivery waits for its turn as its task would have
left it, and the batch in flight queues it when it ends. Without a send in
flight it is queued as before."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import OutboxEvent
from relay import outbox
from tests.harness.webhook_pages import delivery_row
from webhooks import dispatch as dispatch_module
from webhooks import sending, tasks, turns
from webhooks.models import WebhookDelivery, WebhookDeliveryStatus

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def complete_one(assigner, assignee, n: int) -> None:
    commitment = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description=f"Request {n}",
        deadline=timezone.now() + dt.timedelta(days=3),
        external_system="jira",
        external_id=f"jira-{n}",
    )
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    services.commitment_complete(actor=Actor.for_user(assignee), commitment_id=commitment.pk)


def dispatch(django_capture_on_commit_callbacks) -> list:
    """Dispatch what is undispatched, its after-commit work run; returns the
    webhook deliveries it made."""
    before = set(WebhookDelivery.objects.values_list("pk", flat=True))
    events = OutboxEvent.objects.filter(dispatched_at__isnull=True).order_by("pk")
    with django_capture_on_commit_callbacks(execute=True):
        outbox.outbox_events_dispatch(events=[(event.pk, "") for event in events])
    return list(WebhookDelivery.objects.exclude(pk__in=before).order_by("created_at"))


def webhook_tasks(sent: list) -> list:
    names = {tasks.deliver_webhook.name, tasks.deliver_webhooks.name}
    return [(name, arg) for name, arg in sent if name in names]


def test_a_webhook_to_an_endpoint_being_sent_to_waits_for_the_line_without_a_task(
    assigner, assignee, endpoint, broker, settings, django_capture_on_commit_callbacks
):
    # A send to the endpoint in flight: another worker's batch holds it.
    flying = delivery_row(endpoint, None)
    lease = timezone.now() + dt.timedelta(seconds=60)
    WebhookDelivery.objects.filter(pk=flying.pk).update(
        status=WebhookDeliveryStatus.SENDING, claimed_until=lease, attempts=1
    )
    complete_one(assigner, assignee, 0)

    start = timezone.now()
    made = dispatch(django_capture_on_commit_callbacks)

    assert len(made) == 2  # activated and completed
    assert webhook_tasks(broker) == []
    for row in made:
        # As the claim leaves one whose endpoint is busy: pending, not
        # stamped as queued, due (for the sweep) after WEBHOOK_TIMEOUT.
        assert row.status == WebhookDeliveryStatus.PENDING
        assert row.enqueued_at is None
        assert row.next_attempt_at >= start + dt.timedelta(seconds=settings.WEBHOOK_TIMEOUT)

    # The send in flight ends: its batch queues the endpoint's line, these
    # two in the order they were made, as one batch task.
    WebhookDelivery.objects.filter(pk=flying.pk).update(
        status=WebhookDeliveryStatus.DELIVERED, claimed_until=None
    )
    with django_capture_on_commit_callbacks(execute=True):
        turns.next_in_line(endpoint.user_id, now=timezone.now())
    assert webhook_tasks(broker) == [
        (tasks.deliver_webhooks.name, [str(row.pk) for row in made]),
    ]


def test_a_webhook_to_an_idle_endpoint_is_queued_at_once(
    assigner, assignee, endpoint, broker, django_capture_on_commit_callbacks
):
    # A lease that ran out (a dead worker's) is no send in flight.
    stale = delivery_row(endpoint, None)
    WebhookDelivery.objects.filter(pk=stale.pk).update(
        status=WebhookDeliveryStatus.SENDING,
        claimed_until=timezone.now() - dt.timedelta(seconds=1),
        attempts=1,
    )
    complete_one(assigner, assignee, 0)

    with CaptureQueriesContext(connection) as queries:
        made = dispatch(django_capture_on_commit_callbacks)

    assert webhook_tasks(broker) == [
        (tasks.deliver_webhooks.name, [str(row.pk) for row in made]),
    ]
    for row in made:
        assert row.enqueued_at is not None
    # The look at the endpoints' leases: one query, nothing updated.
    lease = '"webhooks_webhookdelivery"."claimed_until" >'
    assert [q["sql"].split()[0] for q in queries if lease in q["sql"]] == ["SELECT"]


def finish_the_send_in_flight(flying, endpoint) -> None:
    """The batch sending `flying` ends: its outcome recorded, then its
    person's next in line queued (as `sending.webhooks_send` does)."""
    WebhookDelivery.objects.filter(pk=flying.pk).update(
        status=WebhookDeliveryStatus.DELIVERED, claimed_until=None
    )
    turns.next_in_line(endpoint.user_id, now=timezone.now())


def test_a_line_queued_while_the_dispatch_looked_is_not_left_out_of_reach(
    assigner, assignee, endpoint, broker, monkeypatch, django_capture_on_commit_callbacks
):
    """The dispatch sees the send in flight; before it leaves its deliveries
    waiting, that send ends and its batch queues them (the next in line). They
    must stay claimable by that task: moved past now, the task found nothing
    to claim, and the line stalled until the sweep (the sustained run's first
    seconds, issue 29: about 25 s)."""
    flying = delivery_row(endpoint, None)
    WebhookDelivery.objects.filter(pk=flying.pk).update(
        status=WebhookDeliveryStatus.SENDING,
        claimed_until=timezone.now() + dt.timedelta(seconds=60),
        attempts=1,
    )
    complete_one(assigner, assignee, 0)
    looked = dispatch_module._busy_endpoints

    def look_then_the_send_ends(*args, **kwargs):
        busy = looked(*args, **kwargs)
        finish_the_send_in_flight(flying, endpoint)
        return busy

    monkeypatch.setattr(dispatch_module, "_busy_endpoints", look_then_the_send_ends)
    made = dispatch(django_capture_on_commit_callbacks)

    ids = [str(row.pk) for row in made]
    assert webhook_tasks(broker) == [(tasks.deliver_webhooks.name, ids)]
    # The task the line's end queued claims them.
    claims = sending._claim_many(ids, timezone.now())
    assert [claim.row.pk for claim in claims] == [row.pk for row in made]


def test_a_batch_that_finds_the_endpoint_busy_leaves_a_row_the_line_queued_since(
    assigner, assignee, endpoint, broker, monkeypatch, django_capture_on_commit_callbacks
):
    """A batch task reads its rows, then sees another worker's send to their
    endpoint in flight; that send ends and its batch queues the line before
    this one leaves the rows waiting: they stay due, for the task queued."""
    complete_one(assigner, assignee, 0)
    made = dispatch(django_capture_on_commit_callbacks)  # idle endpoint: queued
    ids = [str(row.pk) for row in made]
    broker.clear()
    flying = delivery_row(endpoint, None)
    WebhookDelivery.objects.filter(pk=flying.pk).update(
        status=WebhookDeliveryStatus.SENDING,
        claimed_until=timezone.now() + dt.timedelta(seconds=60),
        attempts=1,
        created_at=timezone.now() - dt.timedelta(seconds=5),
    )
    read = turns.in_flight_of

    def read_then_the_send_ends(*args, **kwargs):
        flying_now = read(*args, **kwargs)
        finish_the_send_in_flight(flying, endpoint)
        return flying_now

    monkeypatch.setattr(turns, "in_flight_of", read_then_the_send_ends)
    with django_capture_on_commit_callbacks(execute=True):
        assert sending._claim_many(ids, timezone.now()) == []  # busy when it looked
    monkeypatch.setattr(turns, "in_flight_of", read)

    assert webhook_tasks(broker) == [(tasks.deliver_webhooks.name, ids)]
    claims = sending._claim_many(ids, timezone.now())
    assert [claim.row.pk for claim in claims] == [row.pk for row in made]
