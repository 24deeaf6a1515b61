"""The nudges' Celery tasks: thin, each takes a row id and calls a service.
Every one may run twice, late, or for a row that is gone; the services'
conditional claims make that harmless. The services queue them by import
(`notifications.dispatch`, `notifications.services`); settings name them
only for beat (CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from notifications import reminders, sending, services


@shared_task(name="notifications.tasks.deliver_nudge")
def deliver_nudge(delivery_id: str) -> str | None:
    return sending.nudge_send(delivery_id=delivery_id)


@shared_task(name="notifications.tasks.deliver_nudges")
def deliver_nudges(delivery_ids: list[str]) -> dict[str, int]:
    # A batch (lib.deliveries.SEND_BATCH at most): each claimed on its own,
    # one mail connection for them all.
    return sending.nudges_send(delivery_ids=delivery_ids)


@shared_task(name="notifications.tasks.send_test_nudge")
def send_test_nudge(test_id: str) -> str | None:
    return services.test_nudge_send(test_id=test_id)


# The task's name before it took the glossary's word: a message queued by a
# web process of the previous release, still in the broker when this one's
# workers start, is sent all the same.
send_channel_test = shared_task(name="notifications.tasks.send_channel_test")(send_test_nudge.run)


@shared_task(name="notifications.tasks.remind")
def remind() -> int:
    # Beat, every REMINDER_INTERVAL s (CELERY_BEAT_SCHEDULE["reminders"]).
    return reminders.reminders_create_due(now=timezone.now())
