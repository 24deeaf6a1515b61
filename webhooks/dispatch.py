"""Webhook deliveries made: from an outbox event (the relay's dispatch),
with the body frozen, in the caller's transaction, queued after commit on
the webhooks' own queue (settings.WEBHOOK_QUEUE, CELERY_TASK_ROUTES)."""

from __future__ import annotations

import datetime as dt
import logging
import uuid

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.models import AuditAction
from audit.services import Actor, audit_event_record
from commitments.models import OutboxEvent
from lib import deliveries
from webhooks import payloads, tasks
from webhooks.models import (
    OWNER_INACTIVE_REASON,
    WebhookDelivery,
    WebhookDeliveryStatus,
    WebhookEndpoint,
    WebhookPayload,
)

log = logging.getLogger(__name__)


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


def webhook_deliveries_create_many(
    *, events: list[OutboxEvent], now: dt.datetime
) -> list[uuid.UUID]:
    """The webhook deliveries a batch of events calls for: for each, a move on
    a commitment with an external mapping, to its assigner's endpoint for
    that external system, unless paused; one of the contract's four events
    always, any other only when the endpoint chose it
    (WebhookEndpoint.receives). Once per event and endpoint (unique). The
    bodies are frozen here. The endpoint of a deactivated owner gets
    nothing, and is paused. Call inside the dispatch transaction; the sends
    are queued after commit. Returns their ids.

    Reads the batch's endpoints and what was made already in one query
    each, and writes the deliveries and their bodies in one INSERT each. A
    delivery's `created_at` is its turn among its endpoint's
    (`webhooks.turns`): a batch's, made at one `now`, are a microsecond
    apart in the order of the moves."""
    wanted = []
    for event in sorted(events, key=lambda event: event.pk):
        event_name = payloads.EVENT_NAMES.get(event.kind)
        if event_name is not None and event.commitment.has_external_ref:
            wanted.append((event, event_name))
    if not wanted:
        return []
    endpoints: dict[tuple, WebhookEndpoint] = {}
    for endpoint in (
        WebhookEndpoint.objects.filter(
            user_id__in={event.commitment.assigner_id for event, _ in wanted},
            external_system__in={event.commitment.external_system for event, _ in wanted},
            paused_at__isnull=True,
        )
        .select_related("user")
        .order_by("pk")
    ):
        endpoints.setdefault((endpoint.user_id, endpoint.external_system), endpoint)
    chosen = []
    for event, event_name in wanted:
        commitment = event.commitment
        found = endpoints.get((commitment.assigner_id, commitment.external_system))
        if found is not None and found.receives(event_name):
            chosen.append((event, event_name, found))
    if not chosen:
        return []
    made = set(
        WebhookDelivery.objects.filter(
            event_id__in=[event.pk for event, _, _ in chosen],
            endpoint_id__in={endpoint.pk for _, _, endpoint in chosen},
        ).values_list("event_id", "endpoint_id")
    )
    deliveries_made: list[WebhookDelivery] = []
    bodies: list[WebhookPayload] = []
    for n, (event, event_name, endpoint) in enumerate(chosen):
        if (event.pk, endpoint.pk) in made:
            continue
        if not endpoint.user.is_active:
            webhook_endpoint_pause_by_service(endpoint, reason=OWNER_INACTIVE_REASON, now=now)
            continue
        delivery = WebhookDelivery(
            endpoint=endpoint,
            event=event,
            event_name=event_name,
            commitment=event.commitment,
            next_attempt_at=now,
            enqueued_at=now,
            created_at=now + dt.timedelta(microseconds=n),
        )
        deliveries_made.append(delivery)
        bodies.append(
            WebhookPayload(
                delivery=delivery,
                body=payloads.encode(payloads.event_envelope(event, event_name=event_name)),
                event_timestamp=event.occurred_at,
            )
        )
    if not deliveries_made:
        return []
    WebhookDelivery.objects.bulk_create(deliveries_made)
    WebhookPayload.objects.bulk_create(bodies)
    ids = [delivery.pk for delivery in deliveries_made]
    transaction.on_commit(lambda: _queue_unless_in_flight(ids))
    return ids


def _queue_unless_in_flight(delivery_ids: list) -> None:
    """Once the dispatch commits: queue the new deliveries, except those
    whose endpoint has a send in flight (a live lease): these are left
    waiting for their turn as their task would leave them (`sending._claim_many`:
    due after WEBHOOK_TIMEOUT, not stamped as queued), without the task. The
    send in flight is seen after they committed, so the batch sending it
    sees them when it ends and queues its endpoint's line
    (`turns.next_in_line`: a delivery never tried waits for its turn,
    whatever its due time); should that worker die, the sweep queues them
    once due. Under a steady stream to one endpoint (issue 29: every sync's
    webhook goes to one person's endpoint), each dispatch queued a task that
    only took the person's turn lock to find the endpoint busy, ahead of the
    line's next batch. Unlocked: leaving a delivery waiting is always safe."""
    try:
        waiting = _left_for_the_line(delivery_ids)
    except Exception:
        log.warning("Could not tell whether the endpoints are busy; queueing.", exc_info=True)
        waiting = set()
    webhooks_queue_on_commit([pk for pk in delivery_ids if pk not in waiting])


def _left_for_the_line(delivery_ids: list) -> set:
    """The deliveries whose endpoint has a send in flight, left waiting."""
    now = timezone.now()
    rows = WebhookDelivery.objects.filter(pk__in=delivery_ids)
    busy = set(
        WebhookDelivery.objects.filter(
            endpoint_id__in=rows.values("endpoint_id"),
            status=WebhookDeliveryStatus.SENDING,
            claimed_until__gt=now,
        )
        .exclude(pk__in=delivery_ids)
        .values_list("endpoint_id", flat=True)
    )
    waiting = set()
    if busy:
        waiting = set(
            rows.filter(endpoint_id__in=busy, status=WebhookDeliveryStatus.PENDING).values_list(
                "pk", flat=True
            )
        )
        WebhookDelivery.objects.filter(pk__in=waiting, status=WebhookDeliveryStatus.PENDING).update(
            next_attempt_at=now + dt.timedelta(seconds=settings.WEBHOOK_TIMEOUT),
            enqueued_at=None,
            updated_at=now,
        )
    return waiting


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
