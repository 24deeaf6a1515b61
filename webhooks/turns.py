"""Whose turn it is: one send per endpoint in flight at a time, and at most
WEBHOOK_USER_IN_FLIGHT per person across their endpoints, so a person's
receivers that hang hold that many webhook workers, never all of them. A
delivery whose endpoint or owner is busy waits without holding a worker and
is queued the moment a send of theirs ends (`next_in_line`)."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db.models import Q

from webhooks import dispatch
from webhooks.models import WebhookDelivery, WebhookDeliveryStatus, WebhookEndpoint


def busy(owner_id, endpoint_id, *, now: dt.datetime, besides) -> bool:
    """Another delivery to this endpoint is being sent, or the person has
    WEBHOOK_USER_IN_FLIGHT sends in flight already. Takes the person's turn
    lock first (their endpoints' rows, in one order), so two claims cannot
    both pass the count: call inside the claim's transaction."""
    list(
        WebhookEndpoint.objects.select_for_update()
        .filter(user_id=owner_id)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    sending = _in_flight(owner_id, now=now, besides=besides)
    return endpoint_id in sending or len(sending) >= settings.WEBHOOK_USER_IN_FLIGHT


def _in_flight(owner_id, *, now: dt.datetime, besides=None) -> list:
    """The endpoint ids of the person's sends in flight (live leases), one
    per endpoint: a batch that holds several of one endpoint's deliveries
    sends them one at a time (`sending.webhooks_send`)."""
    return list(
        set(
            WebhookDelivery.objects.filter(
                endpoint__user_id=owner_id,
                status=WebhookDeliveryStatus.SENDING,
                claimed_until__gt=now,
            )
            .exclude(pk=besides)
            .values_list("endpoint_id", flat=True)
        )
    )


def in_flight_of(owners: set, *, now: dt.datetime, besides: list) -> dict:
    """`busy`'s lock and read for a batch's owners at once: every owner's
    turn lock (all their endpoints' rows, in the one order of their ids),
    then the endpoints each has in flight, leaving out the batch's own rows.
    Call inside the claim's transaction."""
    list(
        WebhookEndpoint.objects.select_for_update()
        .filter(user_id__in=owners)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    flying: dict = {}
    for owner_id, endpoint_id in (
        WebhookDelivery.objects.filter(
            endpoint__user_id__in=owners,
            status=WebhookDeliveryStatus.SENDING,
            claimed_until__gt=now,
        )
        .exclude(pk__in=besides)
        .values_list("endpoint__user_id", "endpoint_id")
    ):
        flying.setdefault(owner_id, set()).add(endpoint_id)
    return flying


def next_in_line(owner_id, *, now: dt.datetime) -> None:
    """After a send of this person's ends: queue their oldest delivery that
    is due or was never tried (one that waited for its turn), or that a dead
    worker left `sending` (its lease ran out), to an endpoint with nothing in
    flight, after commit. Without the last, such a row waited for a sweep to
    find its endpoint idle: long, on a busy endpoint (docs/faults.md)."""
    sending = _in_flight(owner_id, now=now)
    if len(sending) >= settings.WEBHOOK_USER_IN_FLIGHT:
        return
    due = Q(status=WebhookDeliveryStatus.PENDING) & (
        Q(next_attempt_at__lte=now) | Q(first_attempt_at__isnull=True)
    )
    abandoned = Q(status=WebhookDeliveryStatus.SENDING, claimed_until__lte=now)
    rows = WebhookDelivery.objects.filter(due | abandoned)
    waiting = (
        rows.filter(endpoint__user_id=owner_id)
        .exclude(endpoint_id__in=sending)
        .order_by("created_at")
        .values_list("pk", flat=True)
        .first()
    )
    if waiting is not None:
        rows.filter(pk=waiting).update(next_attempt_at=now, enqueued_at=now, updated_at=now)
        dispatch.webhooks_queue_on_commit([waiting])
