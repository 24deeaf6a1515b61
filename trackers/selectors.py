"""Reads of the trackers app."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from django.db.models import QuerySet

from trackers.models import TrackerConnection, TrackerEvent

if TYPE_CHECKING:
    from accounts.models import User

RECENT_EVENTS = 50


def connection_for_hook(*, hook_id: str) -> TrackerConnection | None:
    """The connection a receiving URL names, with its owner (one query)."""
    return (
        TrackerConnection.objects.select_related("owner").filter(hook_id=hook_id).first()
        if hook_id
        else None
    )


def connections_of(*, owner: User) -> QuerySet[TrackerConnection]:
    return TrackerConnection.objects.filter(owner=owner).order_by("created_at")


def connection_of(*, owner: User, connection_id: uuid.UUID) -> TrackerConnection | None:
    return TrackerConnection.objects.filter(owner=owner, pk=connection_id).first()


def recent_events(*, connection: TrackerConnection) -> list[TrackerEvent]:
    return list(connection.events.order_by("-received_at", "-id")[:RECENT_EVENTS])
