"""The envelope of an outbound webhook (docs/webhooks.md, "The body
(envelope)"): built once, when the delivery is made, and frozen as bytes."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

from commitments.models import EventKind, OutboxEvent
from commitments.selectors import proposal_of, public_actor_kind

# Which outbox events become webhook events, and the timestamp field of each.
EVENT_NAMES: dict[str, str] = {
    # The contract's four (docs/webhooks.md, "Events"): sent to every endpoint.
    EventKind.ACTIVATED: "commitment.activated",
    EventKind.REFUSED: "commitment.refused",
    EventKind.RENEGOTIATED: "commitment.renegotiated",
    EventKind.COMPLETED: "commitment.completed",
    # The conversation (issue 26): only to endpoints that chose them.
    EventKind.PROPOSED: "commitment.proposed",
    EventKind.PROPOSAL_DECLINED: "commitment.proposal_declined",
    EventKind.EXTENSION_REQUESTED: "commitment.extension_requested",
    EventKind.EXTENSION_GRANTED: "commitment.extension_granted",
    EventKind.EXTENSION_DECLINED: "commitment.extension_declined",
    EventKind.WITHDRAWN: "commitment.withdrawn",
    EventKind.REASSIGNED: "commitment.reassigned",
    EventKind.COMMENTED: "commitment.commented",
}
TIMESTAMP_FIELDS: dict[str, str] = {
    "commitment.activated": "activatedAt",
    "commitment.refused": "refusedAt",
    "commitment.renegotiated": "renegotiatedAt",
    "commitment.completed": "completedAt",
    "commitment.proposed": "proposedAt",
    "commitment.proposal_declined": "proposalDeclinedAt",
    "commitment.extension_requested": "extensionRequestedAt",
    "commitment.extension_granted": "extensionGrantedAt",
    "commitment.extension_declined": "extensionDeclinedAt",
    "commitment.withdrawn": "withdrawnAt",
    "commitment.reassigned": "reassignedAt",
    "commitment.commented": "commentedAt",
}
# Every endpoint gets these, whatever it chose: the contract's events.
CONTRACT_EVENTS: tuple[str, ...] = (
    "commitment.activated",
    "commitment.refused",
    "commitment.renegotiated",
    "commitment.completed",
)
# An endpoint gets these only when it chose them (WebhookEndpoint.events),
# in the order the Webhooks page offers them, with what each one says.
OPTIONAL_EVENTS: dict[str, str] = {
    "commitment.proposed": "the assignee proposed other terms instead of accepting",
    "commitment.proposal_declined": "a proposal was declined: the original terms wait again",
    "commitment.extension_requested": "the assignee asked for more time",
    "commitment.extension_granted": "more time was granted: the deadline changed",
    "commitment.extension_declined": "a request for more time was declined",
    "commitment.withdrawn": "the commitment was withdrawn",
    "commitment.reassigned": "the commitment was handed to someone else",
    "commitment.commented": "someone commented (the text is never sent)",
}
# The events about a proposal: their envelope adds `proposal` ({id, deadline}).
PROPOSAL_EVENTS = frozenset(
    {
        "commitment.proposed",
        "commitment.proposal_declined",
        "commitment.extension_requested",
        "commitment.extension_granted",
        "commitment.extension_declined",
    }
)
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
    # (commitments.services), written in the transaction of the change. The
    # four contract events are exactly these fields, in this order; a new
    # event may add one after them (`proposal`), never change them.
    body: dict[str, Any] = {
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
    if event_name in PROPOSAL_EVENTS:
        body["proposal"] = _proposal(event)
    return body


def _proposal(event: OutboxEvent) -> dict[str, Any]:
    """What a proposal event was about, and no more: the proposal's id and
    the deadline it proposes (null: the deadline is not one of the terms it
    changes). Never its note, its answer's note or its wording: those are
    one person's words to another (docs/webhooks.md, "What the new events
    carry")."""
    try:
        proposal_id = uuid.UUID(str((getattr(event, "detail", None) or {})["proposalId"]))
    except (KeyError, ValueError):
        proposal_id = None
    proposal = (
        proposal_of(commitment_id=event.commitment.pk, proposal_id=proposal_id)
        if proposal_id
        else None
    )
    if proposal is None:  # not written by the services: say what is known
        return {"id": str(proposal_id) if proposal_id else None, "deadline": None}
    return {
        "id": str(proposal.pk),
        "deadline": iso_millis(proposal.deadline) if proposal.deadline else None,
    }


def test_envelope(
    *, external_system: str, user_id, now: dt.datetime, events: list[str] | None = None
) -> dict[str, Any]:
    """A `commitment.test` event: the envelope's shape, about no real
    commitment (the nil UUID), marked `"test": true`, listing the events the
    endpoint receives (`events`: the contract's four, then those it chose)."""
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
        "events": list(events) if events is not None else list(CONTRACT_EVENTS),
    }
