"""Webhook deliveries made: from an outbox event (the relay's dispatch),
with the body frozen, in the caller's transaction, queued after commit on
the webhooks' own queue (settings.WEBHOOK_QUEUE, CELERY_TASK_ROUTES)."""

from __future__ import annotations

import datetime as dt
import uuid

from django.utils import timezone

from audit.models import AuditAction
from audit.services import Actor, audit_event_record
from commitments.models import OutboxEvent
from lib import deliveries
from webhooks import payloads, tasks
from webhooks.models import (
    OWNER_INACTIVE_REASON,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookPayload,
)


def webhooks_queue_on_commit(delivery_ids: list) -> None:
    deliveries.queue_on_commit(
        tasks.deliver_webhook,
        WebhookDelivery.objects.all(),
        delivery_ids,
        batch_task=tasks.deliver_webhooks,
    )


def webhooks_publish(delivery_ids: list) -> None:
    """Queue them now, in batches (the sweep, after its commit)."""
    deliveries.publish(
        tasks.deliver_webhook,
        WebhookDelivery.objects.all(),
        delivery_ids,
        batch_task=tasks.deliver_webhooks,
    )


def webhook_deliveries_create(*, event: OutboxEvent, now: dt.datetime) -> list[uuid.UUID]:
    """The webhook delivery `event` calls for, if any: a move on a commitment
    with an external mapping, to its assigner's endpoint for that external
    system, unless paused; one of the contract's four events always, any
    other only when the endpoint chose it (WebhookEndpoint.receives). The
    body is frozen here. Call inside the dispatch transaction; the send is
    queued after commit. The endpoint of a deactivated owner gets nothing,
    and is paused."""
    event_name = payloads.EVENT_NAMES.get(event.kind)
    commitment = event.commitment
    if event_name is None or not commitment.has_external_ref:
        return []
    endpoint = (
        WebhookEndpoint.objects.filter(
            user_id=commitment.assigner_id,
            external_system=commitment.external_system,
            paused_at__isnull=True,
        )
        .select_related("user")
        .first()
    )
    if endpoint is None or not endpoint.receives(event_name):
        return []
    if WebhookDelivery.objects.filter(event=event, endpoint=endpoint).exists():
        return []
    if not endpoint.user.is_active:
        webhook_endpoint_pause_by_service(endpoint, reason=OWNER_INACTIVE_REASON, now=now)
        return []
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint,
        event=event,
        event_name=event_name,
        commitment=commitment,
        next_attempt_at=now,
        enqueued_at=now,
        created_at=now,
    )
    WebhookPayload.objects.create(
        delivery=delivery,
        body=payloads.encode(payloads.event_envelope(event, event_name=event_name)),
        event_timestamp=event.occurred_at,
    )
    webhooks_queue_on_commit([delivery.pk])
    return [delivery.pk]


def webhook_deliveries_take_due(
    *, now: dt.datetime, requeue_after: dt.timedelta, limit: int
) -> list:
    """For the sweep (lib.deliveries.take_due). Call inside its transaction."""
    return deliveries.take_due(
        WebhookDelivery.objects.all(), now=now, requeue_after=requeue_after, limit=limit
    )


def webhook_endpoint_pause_by_service(
    endpoint: WebhookEndpoint, *, reason: str, now: dt.datetime | None = None
) -> None:
    """The service pauses an endpoint (410 Gone, an unreadable secret, a
    deactivated owner), once; on the audit trail with the system as actor."""
    now = now or timezone.now()
    if WebhookEndpoint.objects.filter(pk=endpoint.pk, paused_at__isnull=True).update(
        paused_at=now, paused_reason=reason[:500], updated_at=now
    ):
        audit_event_record(
            actor=Actor.system(),
            subject=endpoint,
            action=AuditAction.WEBHOOK_ENDPOINT_PAUSED,
            payload={"reason": reason[:500]},
        )
