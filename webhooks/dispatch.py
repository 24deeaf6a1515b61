"""Webhook deliveries made: from an outbox event (the relay's dispatch),
with the body frozen, in the caller's transaction, queued after commit on
the webhooks' own queue (settings.WEBHOOK_QUEUE, CELERY_TASK_ROUTES)."""

from __future__ import annotations

import datetime as dt
import logging
import uuid

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from audit.models import AuditAction
from audit.services import Actor, audit_event_record
from commitments.models import OutboxEvent
from lib import deliveries
from lib.db import Prepared
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


# The endpoints of a batch's assigners for its external systems, compiled
# once per number of each (lib.db.Prepared).
_endpoints_of = Prepared(
    lambda people, systems: (
        WebhookEndpoint.objects.filter(
            user_id__in=people, external_system__in=systems, paused_at__isnull=True
        )
        .select_related("user")
        .order_by("pk")
    )
)


# The deliveries made already of these events to these endpoints.
_made_for = Prepared(
    lambda event_ids, endpoint_ids: (
        WebhookDelivery.objects.filter(event_id__in=event_ids, endpoint_id__in=endpoint_ids)
        .order_by()  # a set: the default ordering would only sort
        .values_list("event_id", "endpoint_id")
    )
)
# The endpoints of these deliveries with a send in flight (a live lease)
# other than theirs: after each dispatch's commit.
_busy_endpoints_of = Prepared(
    lambda delivery_ids, now: (
        WebhookDelivery.objects.filter(
            endpoint_id__in=WebhookDelivery.objects.filter(pk__in=delivery_ids).values(
                "endpoint_id"
            ),
            status=WebhookDeliveryStatus.SENDING,
            claimed_until__gt=now,
        )
        .exclude(pk__in=delivery_ids)
        .values_list("endpoint_id", flat=True)
    )
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
    for endpoint in _endpoints_of(
        {event.commitment.assigner_id for event, _ in wanted},
        {event.commitment.external_system for event, _ in wanted},
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
        _made_for(
            [event.pk for event, _, _ in chosen],
            {endpoint.pk for _, _, endpoint in chosen},
        )
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
    transaction.on_commit(lambda: _queue_unless_in_flight(ids, stamped=now))
    return ids


def _queue_unless_in_flight(delivery_ids: list, *, stamped: dt.datetime | None = None) -> None:
    """Once the dispatch commits: queue the new deliveries, except those
    whose endpoint has a send in flight (a live lease): these are left
    waiting for their turn as their task would leave them (`leave_waiting`),
    without the task. The send in flight is seen after they committed, so
    the batch sending it sees them when it ends and queues its endpoint's
    line (`turns.next_in_line`: a delivery never tried waits for its turn,
    whatever its due time); should that worker die, the sweep queues them
    once due. Under a steady stream to one endpoint (issue 29: every sync's
    webhook goes to one person's endpoint), each dispatch queued a task that
    only took the person's turn lock to find the endpoint busy, ahead of the
    line's next batch. Unlocked: the batch in flight may end, and queue them,
    between the look and the leaving; `leave_waiting` then leaves them as
    that queued them (`stamped`: the `enqueued_at` the dispatch gave them)."""
    try:
        waiting = _left_for_the_line(delivery_ids, stamped=stamped)
    except Exception:
        log.warning("Could not tell whether the endpoints are busy; queueing.", exc_info=True)
        waiting = set()
    webhooks_queue_on_commit([pk for pk in delivery_ids if pk not in waiting])


def _busy_endpoints(delivery_ids: list, *, now: dt.datetime) -> set:
    """The endpoints of these deliveries with a send in flight (a live
    lease) other than theirs (`_busy_endpoints_of`)."""
    return set(_busy_endpoints_of(delivery_ids, now))


def _left_for_the_line(delivery_ids: list, *, stamped: dt.datetime | None = None) -> set:
    """The deliveries whose endpoint has a send in flight, left waiting."""
    now = timezone.now()
    busy = _busy_endpoints(delivery_ids, now=now)
    waiting: set = set()
    if busy:
        waiting = set(
            WebhookDelivery.objects.filter(
                pk__in=delivery_ids, endpoint_id__in=busy, status=WebhookDeliveryStatus.PENDING
            ).values_list("pk", flat=True)
        )
        leave_waiting(dict.fromkeys(waiting, stamped), now=now)
    return waiting


def leave_waiting(stamps: dict, *, now: dt.datetime) -> int:
    """Deliveries whose endpoint or owner is busy, left for their turn:
    pending, due (for the sweep) after WEBHOOK_TIMEOUT, not stamped as
    queued. `stamps` gives each id's `enqueued_at` as it was read before the
    look that found them busy: a delivery stamped since was queued by the
    line's next in line (`turns.next_in_line`, when the send in flight
    ended), and is left as that left it, due now: moved past now, its task
    could not claim it, and the line stalled until the sweep (about 25 s,
    issue 29).

    A row another transaction holds is passed over, never waited for (`FOR
    UPDATE SKIP LOCKED`): whoever holds it is changing it (a claim takes it,
    the line's next in line or the sweep queues it, a send records it), and
    this write no longer applies once they commit. Waiting, it took its
    rows' locks in no set order while the line's claim, which waits for
    rows it is not sure of (`sending._claim_line`), took them in its own: in
    a sustained run the two deadlocked, PostgreSQL cancelled the claim, and
    the line waited 21 s for the sweep. Returns how many were left
    waiting."""
    if not stamps:
        return 0
    same = Q()
    for pk, stamp in stamps.items():
        same |= (
            Q(pk=pk, enqueued_at=stamp) if stamp is not None else Q(pk=pk, enqueued_at__isnull=True)
        )
    free = (
        WebhookDelivery.objects.filter(same, status=WebhookDeliveryStatus.PENDING)
        .order_by()
        .select_for_update(skip_locked=True)
        .values("pk")
    )
    # One statement (`UPDATE ... WHERE id IN (SELECT ... SKIP LOCKED)`); the
    # transaction is only what Django asks of a FOR UPDATE.
    with transaction.atomic(savepoint=False):
        return WebhookDelivery.objects.filter(pk__in=free).update(
            next_attempt_at=now + dt.timedelta(seconds=settings.WEBHOOK_TIMEOUT),
            enqueued_at=None,
            updated_at=now,
        )


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
