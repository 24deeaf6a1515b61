"""Helpers of the Webhooks page, admin and command tests: endpoints made
through the services, deliveries in any state written as rows (the sending
machinery has tests of its own), and the network kept on this machine."""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket

from django.utils import timezone

from commitments.models import Commitment, Status
from tests.harness.commitments import commitment_in
from webhooks import payloads, services
from webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookPayload

PUBLIC_ADDRESS = "93.184.215.14"  # what every name resolves to, unless a test says otherwise
RECEIVER = "https://hooks.example.com/commitments"


def resolve_every_name_to(monkeypatch, address: str = PUBLIC_ADDRESS) -> None:
    """DNS, at the one seam lib.outbound resolves through (an address
    written in a URL stays itself)."""

    def getaddrinfo(host, port, *args, **kwargs):
        try:
            answer = str(ipaddress.ip_address(host))
        except ValueError:
            answer = address
        family = socket.AF_INET6 if ":" in answer else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (answer, port))]

    monkeypatch.setattr("lib.outbound.socket.getaddrinfo", getaddrinfo)


def endpoint_for(user, system: str = "jira", url: str = RECEIVER) -> WebhookEndpoint:
    endpoint, _secret = services.webhook_endpoint_create(user=user, external_system=system, url=url)
    return endpoint


def mapped_commitment(assigner, assignee, *, system: str = "jira", external_id: str = "OPS-1"):
    c = commitment_in(Status.COMPLETED, assigner, assignee)
    Commitment.objects.filter(pk=c.pk).update(external_system=system, external_id=external_id)
    c.refresh_from_db()
    return c


def delivery_row(
    endpoint: WebhookEndpoint,
    commitment: Commitment | None,
    *,
    status: str = "pending",
    attempts: int = 0,
    status_code: int | None = None,
    excerpt: str = "",
    error: str = "",
    next_attempt_at: dt.datetime | None = None,
    event_name: str = "commitment.completed",
) -> WebhookDelivery:
    now = timezone.now()
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint,
        event_name=event_name,
        commitment=commitment,
        is_test=event_name == payloads.TEST_EVENT,
        status=status,
        attempts=attempts,
        first_attempt_at=now if attempts else None,
        next_attempt_at=next_attempt_at or now,
        failed_at=now if status == "failed" else None,
        last_status_code=status_code,
        last_response_excerpt=excerpt,
        last_error=error,
    )
    WebhookPayload.objects.create(
        delivery=delivery,
        body=payloads.encode({"event": event_name, "id": str(getattr(commitment, "pk", ""))}),
        event_timestamp=now,
    )
    return delivery
