"""Celery tasks: thin, each takes a row id and calls a service. Every one may
run twice, late, or for a row that is gone; the services' conditional claims
make that harmless. Apps queue these by name (`lib.jobs`), so this is the one
module that imports both Celery and the services."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from delivery.outbox import DISPATCH_TASK, outbox_event_dispatch, outbox_sweep
from notifications.channels import TEST_TASK, notification_test_send
from notifications.reminders import reminders_create_due
from notifications.sending import SEND_TASK, nudge_send
from webhooks.sending import SEND_TASK as WEBHOOK_SEND_TASK
from webhooks.sending import webhook_send


@shared_task(name=DISPATCH_TASK)
def dispatch_event(event_id: int) -> None:
    outbox_event_dispatch(event_id=event_id)


@shared_task(name=SEND_TASK)
def deliver(delivery_id: str) -> str | None:
    return nudge_send(delivery_id=delivery_id)


@shared_task(name=WEBHOOK_SEND_TASK)
def deliver_webhook(delivery_id: str) -> str | None:
    # Routed to settings.WEBHOOK_QUEUE (CELERY_TASK_ROUTES): its own workers.
    return webhook_send(delivery_id=delivery_id)


@shared_task(name=TEST_TASK)
def send_test(test_id: str) -> str | None:
    return notification_test_send(test_id=test_id)


@shared_task(name="delivery.tasks.sweep")
def sweep() -> dict[str, int]:
    result = outbox_sweep()
    return {
        "events": result.events,
        "deliveries": result.deliveries,
        "webhooks": result.webhooks,
        "tests": result.tests,
    }


@shared_task(name="delivery.tasks.remind")
def remind() -> int:
    # Beat, every REMINDER_INTERVAL s (CELERY_BEAT_SCHEDULE["reminders"]).
    return reminders_create_due(now=timezone.now())
