"""The outbound webhooks' Celery task: thin, it takes a delivery id and
calls the service (it may run twice, late, or for a row that is gone; the
claim makes that harmless). Routed to settings.WEBHOOK_QUEUE
(CELERY_TASK_ROUTES), so a slow receiver never holds up a nudge; queued by
import from `webhooks.dispatch`."""

from __future__ import annotations

from celery import shared_task

from webhooks import sending


@shared_task(name="webhooks.tasks.deliver_webhook")
def deliver_webhook(delivery_id: str) -> str | None:
    return sending.webhook_send(delivery_id=delivery_id)


@shared_task(name="webhooks.tasks.deliver_webhooks")
def deliver_webhooks(delivery_ids: list[str]) -> dict[str, int]:
    # A batch: each claimed on its own, in order (lib.outbound keeps the
    # connection to each receiver open between them).
    return sending.webhooks_send(delivery_ids=delivery_ids)
