"""The relay's Celery tasks: dispatch one outbox event, and the sweep (beat,
CELERY_BEAT_SCHEDULE["outbox-sweep"]). Thin: each calls a service, and may
run twice or late; the claims make that harmless. The apps' own tasks are in
`notifications.tasks` and `webhooks.tasks`."""

from __future__ import annotations

import dataclasses

from celery import shared_task

from lib.logs import request_id_var
from relay import outbox


@shared_task(name="relay.tasks.dispatch_event")
def dispatch_event(event_id: int) -> None:
    # Topped up with what is due when it runs (outbox.outbox_events_dispatch_due).
    # Under its request's id (config/celery.py set it from the message).
    outbox.outbox_events_dispatch_due(events=[(int(event_id), request_id_var.get() or "")])


@shared_task(name="relay.tasks.dispatch_events")
def dispatch_events(events: list[list]) -> int:
    # [[event id, request id], ...]: a batch the relay or the sweep queued.
    return outbox.outbox_events_dispatch_due(events=[(int(e), str(r or "")) for e, r in events])


@shared_task(name="relay.tasks.sweep")
def sweep() -> dict[str, int]:
    return dataclasses.asdict(outbox.outbox_sweep())
