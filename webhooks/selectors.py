"""Reads for the Webhooks page and admin."""

from __future__ import annotations

from django.db.models import QuerySet

from webhooks.models import WebhookDelivery, WebhookDeliveryStatus, WebhookEndpoint


def webhook_endpoints_of(*, user) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(user=user).order_by("external_system")


def webhook_endpoint_of(*, user, endpoint_id) -> WebhookEndpoint | None:
    """One of `user`'s endpoints, or None (another person's is None too)."""
    return WebhookEndpoint.objects.filter(user=user, pk=endpoint_id).first()


def webhook_deliveries_recent(*, endpoint: WebhookEndpoint, limit: int = 20):
    """The newest deliveries of an endpoint, with their commitments."""
    return list(
        WebhookDelivery.objects.filter(endpoint=endpoint)
        .select_related("commitment")
        .order_by("-created_at")[:limit]
    )


def webhook_deliveries_failed(*, endpoint: WebhookEndpoint, limit: int = 50):
    """Its permanently failed deliveries, newest first: the ones to replay."""
    return list(
        WebhookDelivery.objects.filter(endpoint=endpoint, status=WebhookDeliveryStatus.FAILED)
        .select_related("commitment")
        .order_by("-created_at")[:limit]
    )


def webhook_delivery_of(*, user, delivery_id) -> WebhookDelivery | None:
    """One delivery to one of `user`'s endpoints, or None."""
    return (
        WebhookDelivery.objects.filter(endpoint__user=user, pk=delivery_id)
        .select_related("endpoint")
        .first()
    )
