"""The envelope of an outbound webhook (docs/webhooks.md, "The body
(envelope)"): built once, when the delivery is made, and frozen as bytes."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from commitments.models import EventKind, OutboxEvent
from commitments.selectors import public_actor_kind

# Which outbox events become webhook events, and the timestamp field of each.
EVENT_NAMES: dict[str, str] = {
    EventKind.ACTIVATED: "commitment.activated",
    EventKind.REFUSED: "commitment.refused",
    EventKind.RENEGOTIATED: "commitment.renegotiated",
    EventKind.COMPLETED: "commitment.completed",
}
TIMESTAMP_FIELDS: dict[str, str] = {
    "commitment.activated": "activatedAt",
    "commitment.refused": "refusedAt",
    "commitment.renegotiated": "renegotiatedAt",
    "commitment.completed": "completedAt",
}
TEST_EVENT = "commitment.test"
TEST_COMMITMENT_ID = "00000000-0000-0000-0000-000000000000"


def iso_millis(moment: dt.datetime) -> str:
    """ISO-8601 UTC with milliseconds: `2026-01-02T03:04:05.678Z`."""
    moment = moment.astimezone(dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def encode(envelope: dict[str, Any]) -> str:
    """The body as sent: compact JSON, ASCII only (so its bytes are the same
    whatever a receiver assumes of the encoding)."""
    return json.dumps(envelope, separators=(",", ":"))


def event_envelope(event: OutboxEvent, *, event_name: str) -> dict[str, Any]:
    commitment = event.commitment
    # The contract's kinds are user, api_token and system: a tracker connection
    # (the owner's credential on the inbound API, like a token) is reported as
    # `api_token` with the connection's id as tokenId (docs/trackers.md).
    kind = public_actor_kind(event.actor_kind)
    actor: dict[str, Any] = {
        "kind": kind,
        "userId": str(event.actor_user_id) if event.actor_user_id else None,
    }
    if kind == "api_token":
        actor["tokenId"] = str(event.actor_token_id) if event.actor_token_id else None
    # The transition's stamp and the outbox row's occurred_at are one instant
    # (commitments.services), written in the transaction of the change.
    return {
        "event": event_name,
        "id": str(commitment.pk),
        "externalSystem": commitment.external_system,
        "externalId": commitment.external_id,
        "previousStatus": event.previous_status,
        "newStatus": event.new_status,
        TIMESTAMP_FIELDS[event_name]: iso_millis(event.occurred_at),
        "actor": actor,
        "timestamp": iso_millis(event.occurred_at),
    }


def test_envelope(*, external_system: str, user_id, now: dt.datetime) -> dict[str, Any]:
    """A `commitment.test` event: the envelope's shape, about no real
    commitment (the nil UUID), marked `"test": true`."""
    return {
        "event": TEST_EVENT,
        "id": TEST_COMMITMENT_ID,
        "externalSystem": external_system,
        "externalId": "test",
        "previousStatus": "Active",
        "newStatus": "Completed",
        "completedAt": iso_millis(now),
        "actor": {"kind": "user", "userId": str(user_id)},
        "timestamp": iso_millis(now),
        "test": True,
    }
