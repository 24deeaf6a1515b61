"""Reads for the Webhooks page and admin."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db.models import Prefetch, QuerySet

from webhooks.models import WebhookDelivery, WebhookDeliveryStatus, WebhookEndpoint

if TYPE_CHECKING:
    from accounts.models import User


def webhook_endpoints_of(*, user: User) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(user=user).order_by("external_system")


def webhook_endpoint_of(*, user: User, endpoint_id: uuid.UUID) -> WebhookEndpoint | None:
    """One of `user`'s endpoints, or None (another person's is None too)."""
    return WebhookEndpoint.objects.filter(user=user, pk=endpoint_id).first()


def webhook_deliveries_recent(
    *, endpoint: WebhookEndpoint, limit: int = 20
) -> list[WebhookDelivery]:
    """The newest deliveries of an endpoint, with their commitments."""
    return list(
        WebhookDelivery.objects.filter(endpoint=endpoint)
        .select_related("commitment")
        .order_by("-created_at")[:limit]
    )


def webhook_deliveries_failed(
    *, endpoint: WebhookEndpoint, limit: int = 50
) -> list[WebhookDelivery]:
    """Its permanently failed deliveries, newest first: the ones to replay."""
    return list(
        WebhookDelivery.objects.filter(endpoint=endpoint, status=WebhookDeliveryStatus.FAILED)
        .select_related("commitment")
        .order_by("-created_at")[:limit]
    )


def webhook_delivery_of(*, user: User, delivery_id: uuid.UUID) -> WebhookDelivery | None:
    """One delivery to one of `user`'s endpoints, or None."""
    return (
        WebhookDelivery.objects.filter(endpoint__user=user, pk=delivery_id)
        .select_related("endpoint")
        .first()
    )


RECENT_ON_PAGE = 20  # deliveries listed per endpoint on the Webhooks page
FAILED_ON_PAGE = 20  # permanently failed ones listed per endpoint, to replay


def webhook_endpoints_for_page(*, user: User) -> Sequence[WebhookEndpoint]:
    """`user`'s endpoints for the Webhooks page, each with `recent` (its
    newest deliveries), `failed` (its newest permanently failed ones), with
    their commitments, and `last_test` (its newest test among the recent
    ones, or None) with `last_test_text`: three queries however many endpoints there are (a
    sliced prefetch is one windowed query per list)."""
    deliveries = WebhookDelivery.objects.select_related("commitment").order_by("-created_at")
    endpoints = list(
        webhook_endpoints_of(user=user).prefetch_related(
            Prefetch("deliveries", queryset=deliveries[:RECENT_ON_PAGE], to_attr="recent"),
            Prefetch(
                "deliveries",
                queryset=deliveries.filter(status=WebhookDeliveryStatus.FAILED)[:FAILED_ON_PAGE],
                to_attr="failed",
            ),
        )
    )
    for endpoint in endpoints:
        endpoint.last_test = next((d for d in endpoint.recent if d.is_test), None)
        endpoint.last_test_text = (
            delivery_outcome_text(endpoint.last_test) if endpoint.last_test else ""
        )
    return endpoints


def delivery_outcome_text(delivery: WebhookDelivery) -> str:
    """One sentence on where a delivery stands, for its owner."""
    if delivery.status == WebhookDeliveryStatus.DELIVERED:
        return f"Delivered: your receiver answered {delivery.last_status_code}."
    if delivery.status == WebhookDeliveryStatus.FAILED:
        return f"Failed: {delivery.last_error or 'no reason was recorded.'}"
    if delivery.attempts and delivery.last_error:
        return f"Waiting to be tried again. Last attempt: {delivery.last_error}"
    return "Sending…"
