"""Webhook deliveries sent: the leased-send protocol (lib.deliveries) with
the webhooks' policy (docs/delivery.md, "Outbound webhooks"). The worker
task (`webhooks.tasks.deliver_webhook`, on its own queue) calls
`webhook_send`; rows are made by `webhooks.dispatch`.

Policy: sends take turns per endpoint and per person (`webhooks.turns`);
nothing goes to a paused endpoint, nor to one whose owner is deactivated or
whose secret or URL cannot be read (it is paused). 2xx is delivered; `410
Gone` fails the delivery and pauses the endpoint; anything else is retried
on the schedule (`webhooks.schedule`). A test event is sent once.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import transaction
from django.db.models import Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from lib import deliveries
from lib.text import excerpt
from webhooks import dispatch, payloads, turns
from webhooks.models import (
    LOST_SECRET_REASON,
    LOST_URL_REASON,
    OWNER_INACTIVE_REASON,
    AttemptOutcome,
    WebhookDelivery,
    WebhookDeliveryStatus,
)
from webhooks.schedule import next_attempt_at
from webhooks.transport import HOST_REFUSED, Outcome, webhook_post

__all__ = ["HOST_REFUSED", "webhook_send", "webhooks_send"]

log = logging.getLogger(__name__)


def _claim(delivery_id, now: dt.datetime) -> deliveries.Claim[WebhookDelivery] | None:
    """Claim the delivery and record the attempt, or settle it without one
    (endpoint paused, owner deactivated, secret or URL unreadable), or leave
    it for its turn. None when there is nothing to send now."""
    with transaction.atomic():
        rows = WebhookDelivery.objects.all()
        found = rows.filter(pk=delivery_id).values_list("endpoint_id", "endpoint__user_id").first()
        if found is None:
            return None
        endpoint_id, owner_id = found
        if turns.busy(owner_id, endpoint_id, now=now, besides=delivery_id):
            # Its turn comes when a send of this person's ends, or after
            # WEBHOOK_TIMEOUT through the sweep.
            rows.filter(pk=delivery_id, status=WebhookDeliveryStatus.PENDING).update(
                next_attempt_at=now + dt.timedelta(seconds=settings.WEBHOOK_TIMEOUT),
                enqueued_at=None,
                updated_at=now,
            )
            return None
        # The retry window starts at the first claim since creation or replay.
        first = Coalesce("first_attempt_at", Value(now))
        if not deliveries.claim(rows, pk=delivery_id, now=now, first_attempt_at=first):
            return None
        delivery = rows.select_related("endpoint__user", "payload").get(pk=delivery_id)
        deliveries.close_interrupted(delivery, "the request may have been received.")
        endpoint = delivery.endpoint
        for broken, reason in (
            (not endpoint.user.is_active, OWNER_INACTIVE_REASON),
            (endpoint.secret_lost, LOST_SECRET_REASON),
            (endpoint.url_lost, LOST_URL_REASON),
            (endpoint.is_paused and not delivery.is_test, None),
        ):
            if broken:  # settled without an attempt
                if reason is not None:
                    dispatch.webhook_endpoint_pause_by_service(endpoint, reason=reason, now=now)
                reason = reason or f"The endpoint is paused: {endpoint.paused_reason}"
                settled = deliveries.Claim(delivery, None)
                deliveries.fail(settled, now=now, failed_at=now, last_error=excerpt(reason, 1000))
                return None
        attempt = delivery.attempt_log.create(started_at=now)
    return deliveries.Claim(delivery, attempt.pk)


def webhook_send(*, delivery_id) -> str | None:
    """Try to send one webhook delivery now. Returns the attempt's outcome,
    or None when there was nothing to do (not due, already settled, being
    sent by another worker, or failed without an attempt)."""
    now = timezone.now()
    claim = _claim(delivery_id, now)
    if claim is None:
        return None
    delivery = claim.row
    try:
        outcome = webhook_post(
            delivery_id=delivery.pk,
            event_name=delivery.event_name,
            url=delivery.endpoint.url,
            secrets=delivery.endpoint.signing_secrets(now),
            body=delivery.payload.body_bytes,
            now=now,
        )
    except Exception as exc:  # a bug or a time limit: log it, retry like a failure
        log.exception("Webhook delivery %s failed unexpectedly", delivery_id)
        outcome = Outcome(delivered=False, error=excerpt(repr(exc)))
    # From the answer until this commit is the duplicate window: keep it short.
    return _record(claim, outcome)


def webhooks_send(*, delivery_ids: list) -> dict[str, int]:
    """A batch (`deliver_webhooks`): each sent as `webhook_send` sends one
    (its turn, claim, lease and attempt), in order; lib.outbound keeps each
    receiver's connection open between them. One that fails, even
    unexpectedly, is recorded or left to its lease, and the rest go on."""
    outcomes: dict[str, int] = {}
    for delivery_id in delivery_ids:
        try:
            outcome = webhook_send(delivery_id=delivery_id) or "skipped"
        except Exception:
            log.exception("Webhook delivery %s failed in its batch", delivery_id)
            outcome = "error"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return outcomes


def _record(claim: deliveries.Claim[WebhookDelivery], outcome: Outcome) -> str:
    now = timezone.now()
    delivery = claim.row
    answer = {"status_code": outcome.status_code, "response_excerpt": outcome.response_excerpt}
    error = excerpt(outcome.error, 1000)
    last = {f"last_{k}": v for k, v in answer.items()} | {"last_error": error}
    result = AttemptOutcome.DELIVERED if outcome.delivered else AttemptOutcome.FAILED
    with transaction.atomic():
        deliveries.attempt_end(claim, result, error=error, **answer)
        if outcome.delivered:
            deliveries.record_delivered(claim, now=now, **last)
        else:
            due = None
            if outcome.gone and not delivery.is_test:
                reason = (
                    f"The receiver answered 410 Gone on {payloads.iso_millis(now)}; "
                    "resume the endpoint when it accepts events again."
                )
                dispatch.webhook_endpoint_pause_by_service(
                    delivery.endpoint, reason=reason, now=now
                )
            elif not delivery.is_test:
                assert delivery.first_attempt_at is not None  # the claim sets it
                due = next_attempt_at(
                    attempts=claim.fence,
                    first_attempt_at=delivery.first_attempt_at,
                    now=now,
                    retry_after=outcome.retry_after,
                )
            if due is None:
                deliveries.fail(claim, now=now, failed_at=now, **last)
            else:
                deliveries.retry_later(claim, due=due, now=now, **last)
        turns.next_in_line(delivery.endpoint.user_id, now=now)
    log.info(
        "Webhook delivery %s (%s): %s %s",
        delivery.pk,
        delivery.event_name,
        result,
        outcome.status_code or outcome.error,
    )
    return result
