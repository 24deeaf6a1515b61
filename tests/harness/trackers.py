"""Helpers of the tracker connection tests: a connection, deliveries signed as
each tracker signs them, and what a request may have written."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import time
import uuid
from typing import Any
from urllib.parse import urlencode

from django.test import Client

from audit.models import AuditEvent
from commitments.models import Commitment, OutboxEvent
from trackers import services
from trackers.models import TrackerConnection, TrackerEvent


def connect(owner, kind: str, *, system: str | None = None, **identities: str):
    """A connection of `owner` and its secret; `identities`: login=email."""
    connection, secret = services.tracker_connection_add(
        owner=owner, kind=kind, system=system, identity_map=identities
    )
    return connection, secret


def hook_path(connection: TrackerConnection) -> str:
    return f"/api/v1/hooks/{connection.hook_id}"


def hmac_hex(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signed_headers(
    kind: str, secret: str | None, raw: bytes, *, event: str = "", delivery: str | None = None
) -> dict[str, str]:
    """The headers `kind`'s tracker sends with the body `raw`: its event and
    delivery id (fresh unless given), and its signature made with `secret`
    (None: unsigned), each tracker's own scheme over the raw bytes."""
    delivery = delivery or str(uuid.uuid4())
    headers: dict[str, str] = {}
    if kind == "github":
        headers.update({"X-GitHub-Event": event or "issues", "X-GitHub-Delivery": delivery})
        if secret is not None:
            headers["X-Hub-Signature-256"] = "sha256=" + hmac_hex(secret, raw)
    elif kind == "gitlab":
        headers.update({"X-Gitlab-Event": event or "Issue Hook", "Idempotency-Key": delivery})
        headers["X-Gitlab-Event-UUID"] = str(uuid.uuid4())
        if secret is not None:
            headers["X-Gitlab-Token"] = secret
    elif kind == "linear":
        headers.update({"Linear-Event": event or "Issue", "Linear-Delivery": delivery})
        if secret is not None:
            headers["Linear-Signature"] = hmac_hex(secret, raw)
    elif kind == "jira":
        headers["X-Atlassian-Webhook-Identifier"] = delivery
        if secret is not None:
            headers["X-Hub-Signature"] = "sha256=" + hmac_hex(secret, raw)
    return headers


def deliver(
    client: Client,
    connection: TrackerConnection,
    secret: str | None,
    payload: Any,
    *,
    event: str = "",
    delivery: str | None = None,
    body: bytes | None = None,
    content_type: str = "application/json",
    **extra: str,
):
    """POST `payload` as the connection's tracker does: its headers, signed
    with `secret` (None: unsigned), with a delivery id (fresh unless given).
    `body` instead of `payload`: those bytes, as they are (e.g. `form_body`)."""
    raw = body if body is not None else json.dumps(payload).encode()
    headers = signed_headers(connection.kind, secret, raw, event=event, delivery=delivery)
    headers.update(extra)
    return client.post(hook_path(connection), data=raw, content_type=content_type, headers=headers)


FORM = "application/x-www-form-urlencoded"


def form_body(payload: Any) -> bytes:
    """The body GitHub sends with its default content type, `FORM`:
    `payload=<the JSON, URL-encoded>`."""
    return urlencode({"payload": json.dumps(payload)}).encode()


def now_ms() -> int:
    return int(time.time() * 1000)


def written() -> tuple[int, int, int, int]:
    """Commitments, audit events, outbox rows, tracker events."""
    return (
        Commitment.objects.count(),
        AuditEvent.objects.count(),
        OutboxEvent.objects.count(),
        TrackerEvent.objects.count(),
    )


def deep(data: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(data)
