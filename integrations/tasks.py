"""Celery tasks: thin, each takes a row id and calls a service in
`integrations.outbox`. Every one may run twice, late, or for a row that is
gone; the services' conditional claims make that harmless."""

from __future__ import annotations

from celery import shared_task

from integrations import outbox


@shared_task(name="integrations.tasks.dispatch_event")
def dispatch_event(event_id: int) -> None:
    outbox.outbox_event_dispatch(event_id=event_id)


@shared_task(name="integrations.tasks.deliver")
def deliver(delivery_id: str) -> str | None:
    return outbox.delivery_send(delivery_id=delivery_id)


@shared_task(name="integrations.tasks.sweep")
def sweep() -> dict[str, int]:
    result = outbox.outbox_sweep()
    return {"events": result.events, "deliveries": result.deliveries}
