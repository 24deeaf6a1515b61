"""Webhook deliveries: made from an outbox event, claimed, signed, sent and
recorded.

The dispatcher (`delivery.outbox`) calls `webhook_deliveries_create` in the
transaction that claims an outbox event, next to the nudges; the workers call
`webhook_send` with a delivery's id, on a Celery queue of their own
(settings.WEBHOOK_QUEUE), so a slow receiver never holds up a nudge. Rows
follow `lib.leasing` like nudges: a conditional UPDATE claims a due row with
a lease, the attempt is recorded before the POST, the POST happens outside
any transaction, and the outcome is recorded at once, fenced by the attempt
count. One send per endpoint is in flight at a time, and at most
WEBHOOK_USER_IN_FLIGHT (2) per person across all their endpoints (the others
wait for their turn, queued as soon as a send of theirs ends): a person's
receivers that hang hold that many webhook workers, never all of them, and
other people's deliveries keep going. Endpoints of a deactivated owner are
skipped and paused (OWNER_INACTIVE_REASON).

The body is frozen when the delivery is made (`WebhookPayload`); each
attempt signs those bytes with the endpoint's current secret(s) and the
attempt's timestamp, and sends exactly them (lib.outbound.post: the one
guard, the address checked at send time, no redirects), under
WEBHOOK_TIMEOUT for the whole attempt, keeping the first KiB of the answer.

2xx is delivered. `410 Gone` fails the delivery and pauses the endpoint.
Anything else, no answer or a refused address is retried on DECISIONS.md's
schedule (`next_gap`): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h after the previous
attempt (±10 % jitter), one last attempt 24 hours after the first, then
failed for good (replayable). A longer `Retry-After` on 429 or 503 is
honoured when it still falls inside the 24 hours.

The one window for a duplicate, as for nudges: after the receiver has the
request and before the "delivered" UPDATE commits. A worker killed there
leaves the delivery `sending`; its lease runs out and it is sent again, with
the same delivery id, which receivers use to drop the copy.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import time
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from audit.services import Actor, audit_event_record
from commitments.models import OutboxEvent
from lib import jobs, leasing, outbound
from lib.text import excerpt
from webhooks import payloads
from webhooks.models import (
    EXCERPT_BYTES,
    LOST_SECRET_REASON,
    LOST_URL_REASON,
    OWNER_INACTIVE_REASON,
    AttemptOutcome,
    WebhookAttempt,
    WebhookDelivery,
    WebhookDeliveryStatus,
    WebhookEndpoint,
    WebhookPayload,
)
from webhooks.signing import signed_headers

log = logging.getLogger(__name__)

# The worker task that sends one webhook delivery (delivery.tasks), by name.
SEND_TASK = "delivery.tasks.deliver_webhook"
# Gaps after attempts 1, 2, ... (Svix's schedule, cut at 24 hours).
SCHEDULE = (5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600)
JITTER = 0.10
RETRY_AFTER_STATUSES = (429, 503)
HOST_REFUSED = (
    "Not sent: the URL's host name did not resolve, in time, to public internet addresses "
    "only (the detail is in the service's log)."
)


def enqueue_on_commit(delivery_ids: list) -> None:
    """Queue the sends once the transaction commits. A publish that fails
    leaves the row for the next sweep at once."""

    def enqueue() -> None:
        for delivery_id in delivery_ids:
            if not jobs.enqueue(SEND_TASK, str(delivery_id)):
                WebhookDelivery.objects.filter(pk=delivery_id).update(enqueued_at=None)

    if delivery_ids:
        transaction.on_commit(enqueue)


def webhook_deliveries_create(*, event: OutboxEvent, now: dt.datetime) -> list[uuid.UUID]:
    """The webhook delivery `event` calls for, if any: a status change of a
    commitment with an external mapping, to its assigner's endpoint for that
    external system, unless paused. The body is frozen here. Call inside the
    dispatch transaction; the send is queued after commit. The endpoint of a
    deactivated owner gets nothing, and is paused."""
    event_name = payloads.EVENT_NAMES.get(event.kind)
    commitment = event.commitment
    if event_name is None or not commitment.has_external_ref:
        return []
    endpoint = (
        WebhookEndpoint.objects.filter(
            user_id=commitment.assigner_id,
            external_system=commitment.external_system,
            paused_at__isnull=True,
        )
        .select_related("user")
        .first()
    )
    if endpoint is None or WebhookDelivery.objects.filter(event=event, endpoint=endpoint).exists():
        return []
    if not endpoint.user.is_active:
        _pause(endpoint, reason=OWNER_INACTIVE_REASON, now=now)
        return []
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint,
        event=event,
        event_name=event_name,
        commitment=commitment,
        next_attempt_at=now,
        enqueued_at=now,
        created_at=now,
    )
    WebhookPayload.objects.create(
        delivery=delivery,
        body=payloads.encode(payloads.event_envelope(event, event_name=event_name)),
        event_timestamp=event.occurred_at,
    )
    enqueue_on_commit([delivery.pk])
    return [delivery.pk]


def webhook_deliveries_take_due(
    *, now: dt.datetime, requeue_after: dt.timedelta, limit: int
) -> list:
    """For the sweep: ids of due deliveries nobody is working on (due
    retries, expired leases, lost publishes), stamped as queued. Call inside
    the sweep's transaction."""
    return leasing.take_due(
        WebhookDelivery.objects.all(), now=now, requeue_after=requeue_after, limit=limit
    )


def next_attempt_at(
    *,
    attempts: int,
    first_attempt_at: dt.datetime,
    now: dt.datetime,
    retry_after: float | None = None,
) -> dt.datetime | None:
    """When attempt `attempts + 1` is due after attempt `attempts` failed at
    `now`, or None when that was the last one (24 hours have passed since the
    first)."""
    deadline = first_attempt_at + dt.timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW)
    if now >= deadline:
        return None
    index = attempts - 1
    if 0 <= index < len(SCHEDULE):
        gap = SCHEDULE[index] * random.uniform(1 - JITTER, 1 + JITTER)  # noqa: S311
    else:
        gap = (deadline - now).total_seconds()  # the last attempt, at 24 hours
    if retry_after and retry_after > gap and now + dt.timedelta(seconds=retry_after) <= deadline:
        gap = retry_after
    return min(now + dt.timedelta(seconds=gap), deadline)


# --- sending -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Claim:
    delivery: WebhookDelivery
    attempt_id: int | None
    fence: int  # `attempts` after our claim; a later claimer changes it
    url: str
    secrets: list[str]
    body: bytes


@dataclass(frozen=True)
class _Outcome:
    delivered: bool
    status_code: int | None = None
    response_excerpt: str = ""
    error: str = ""
    gone: bool = False
    retry_after: float | None = None


def _claim(delivery_id, now: dt.datetime) -> _Claim | None:
    """Claim the delivery and record the attempt, or settle it without one
    (endpoint paused, owner deactivated, secret or URL unreadable), or leave
    it for later (its endpoint or its owner has as many sends in flight as
    allowed). None when there is nothing to send now."""
    with transaction.atomic():
        lease = dt.timedelta(seconds=settings.DELIVERY_LEASE_SECONDS)
        rows = WebhookDelivery.objects.all()
        found = rows.filter(pk=delivery_id).values_list("endpoint_id", "endpoint__user_id").first()
        if found is None:
            return None
        endpoint_id, owner_id = found
        # One person's claims take turns (their endpoints' rows locked, in one
        # order), so the count of their sends in flight cannot be raced past.
        list(
            WebhookEndpoint.objects.select_for_update()
            .filter(user_id=owner_id)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        if _busy(owner_id, endpoint_id, now=now, besides=delivery_id):
            # Its turn comes when a send of this person's ends (`_next_in_line`),
            # or after WEBHOOK_TIMEOUT through the sweep.
            rows.filter(pk=delivery_id, status=WebhookDeliveryStatus.PENDING).update(
                next_attempt_at=now + dt.timedelta(seconds=settings.WEBHOOK_TIMEOUT),
                enqueued_at=None,
                updated_at=now,
            )
            return None
        if not leasing.claim(rows, pk=delivery_id, now=now, lease=lease):
            return None
        rows.filter(pk=delivery_id, first_attempt_at__isnull=True).update(first_attempt_at=now)
        delivery = WebhookDelivery.objects.select_related(
            "endpoint", "endpoint__user", "payload"
        ).get(pk=delivery_id)
        # An attempt without an outcome belonged to a worker that died mid-send.
        delivery.attempt_log.filter(outcome="").update(
            outcome=AttemptOutcome.INTERRUPTED,
            error="The worker stopped before recording the outcome; the request may have "
            "been received.",
        )
        endpoint = delivery.endpoint
        for broken, reason in (
            (not endpoint.user.is_active, OWNER_INACTIVE_REASON),
            (endpoint.secret_lost, LOST_SECRET_REASON),
            (endpoint.url_lost, LOST_URL_REASON),
        ):
            if broken:
                _pause(endpoint, reason=reason, now=now)
                _fail(delivery, now=now, error=reason)
                return None
        if endpoint.is_paused and not delivery.is_test:
            _fail(delivery, now=now, error=f"The endpoint is paused: {endpoint.paused_reason}")
            return None
        attempt = WebhookAttempt.objects.create(delivery=delivery, started_at=now)
    return _Claim(
        delivery=delivery,
        attempt_id=attempt.pk,
        fence=delivery.attempts,
        url=endpoint.url,
        secrets=endpoint.signing_secrets(now),
        body=delivery.payload.body_bytes,
    )


def _in_flight(owner_id, *, now: dt.datetime, besides=None) -> list:
    """The endpoint ids of the person's sends in flight (live leases), one
    per send."""
    return list(
        WebhookDelivery.objects.filter(
            endpoint__user_id=owner_id,
            status=WebhookDeliveryStatus.SENDING,
            claimed_until__gt=now,
        )
        .exclude(pk=besides)
        .values_list("endpoint_id", flat=True)
    )


def _busy(owner_id, endpoint_id, *, now: dt.datetime, besides) -> bool:
    """Another delivery to this endpoint is being sent, or the person has
    WEBHOOK_USER_IN_FLIGHT sends in flight already."""
    sending = _in_flight(owner_id, now=now, besides=besides)
    return endpoint_id in sending or len(sending) >= settings.WEBHOOK_USER_IN_FLIGHT


def _next_in_line(owner_id, *, now: dt.datetime) -> None:
    """After a send of this person's ends: queue their oldest delivery that
    is due or was never tried (one that waited for its turn) to an endpoint
    with nothing in flight, after commit."""
    sending = _in_flight(owner_id, now=now)
    if len(sending) >= settings.WEBHOOK_USER_IN_FLIGHT:
        return
    waiting = (
        WebhookDelivery.objects.filter(
            endpoint__user_id=owner_id, status=WebhookDeliveryStatus.PENDING
        )
        .exclude(endpoint_id__in=sending)
        .filter(Q(next_attempt_at__lte=now) | Q(first_attempt_at__isnull=True))
        .order_by("created_at")
        .values_list("pk", flat=True)
        .first()
    )
    if waiting is not None:
        WebhookDelivery.objects.filter(pk=waiting, status=WebhookDeliveryStatus.PENDING).update(
            next_attempt_at=now, enqueued_at=now, updated_at=now
        )
        enqueue_on_commit([waiting])


def _fail(delivery: WebhookDelivery, *, now: dt.datetime, error: str) -> None:
    WebhookDelivery.objects.filter(pk=delivery.pk, status=WebhookDeliveryStatus.SENDING).update(
        status=WebhookDeliveryStatus.FAILED,
        failed_at=now,
        claimed_until=None,
        last_error=excerpt(error, 1000),
        updated_at=now,
    )


def _pause(endpoint: WebhookEndpoint, *, reason: str, now: dt.datetime) -> None:
    """The service pauses an endpoint (410 Gone, an unreadable secret); on
    the audit trail with the system as actor."""
    if WebhookEndpoint.objects.filter(pk=endpoint.pk, paused_at__isnull=True).update(
        paused_at=now, paused_reason=reason[:500], updated_at=now
    ):
        audit_event_record(
            actor=Actor.system(),
            subject=endpoint,
            action="webhook_endpoint_paused",
            payload={"reason": reason[:500]},
        )


def _post(claim: _Claim, now: dt.datetime) -> _Outcome:
    delivery = claim.delivery
    headers = signed_headers(
        secrets=claim.secrets,
        delivery_id=str(delivery.pk),
        event_name=delivery.event_name,
        timestamp=int(now.timestamp()),
        body=claim.body,
    )
    timeout = float(settings.WEBHOOK_TIMEOUT)
    try:
        response = outbound.post(
            claim.url,
            content=claim.body,
            headers=headers,
            timeout=timeout,
            deadline=timeout,  # the whole attempt, not each phase
            max_bytes=EXCERPT_BYTES,
        )
    except (outbound.AddressRefused, outbound.ResolutionFailed) as exc:
        # Where the name leads stays in the log: the page would tell its
        # owner how this service's internal names resolve.
        log.warning("Webhook delivery %s not sent: %s", delivery.pk, exc.message)
        return _Outcome(delivered=False, error=HOST_REFUSED)
    except (outbound.OutboundRefused, outbound.OutboundFailed) as exc:
        return _Outcome(delivered=False, error=exc.message)
    text = response.content[:EXCERPT_BYTES].decode("utf-8", errors="replace")
    code = response.status_code
    if 200 <= code < 300:
        return _Outcome(delivered=True, status_code=code, response_excerpt=text)
    return _Outcome(
        delivered=False,
        status_code=code,
        response_excerpt=text,
        error=f"The receiver answered {code}.",
        gone=code == 410,
        retry_after=response.retry_after if code in RETRY_AFTER_STATUSES else None,
    )


def webhook_send(*, delivery_id) -> str | None:
    """Try to send one webhook delivery now. Returns the attempt's outcome,
    or None when there was nothing to do (not due, already settled, being
    sent by another worker, or failed without an attempt)."""
    now = timezone.now()
    claim = _claim(delivery_id, now)
    if claim is None:
        return None
    started = time.monotonic()
    try:
        outcome = _post(claim, now)
    except Exception as exc:  # a bug or a time limit: log it, retry like a failure
        log.exception("Webhook delivery %s failed unexpectedly", delivery_id)
        outcome = _Outcome(delivered=False, error=excerpt(repr(exc)))
    # From the answer until this commit is the duplicate window: keep it short.
    return _record(claim, outcome, started)


def _record(claim: _Claim, outcome: _Outcome, started: float) -> str:
    now = timezone.now()
    delivery = claim.delivery
    common = {
        "last_status_code": outcome.status_code,
        "last_response_excerpt": outcome.response_excerpt,
        "last_error": excerpt(outcome.error, 1000),
        "claimed_until": None,
        "updated_at": now,
    }
    with transaction.atomic():
        WebhookAttempt.objects.filter(pk=claim.attempt_id).update(
            outcome=AttemptOutcome.DELIVERED if outcome.delivered else AttemptOutcome.FAILED,
            duration_ms=int((time.monotonic() - started) * 1000),
            status_code=outcome.status_code,
            response_excerpt=outcome.response_excerpt,
            error=excerpt(outcome.error, 1000),
        )
        rows = WebhookDelivery.objects.filter(pk=delivery.pk)
        if outcome.delivered:
            # Not fenced: whoever holds the row now, the receiver has it.
            rows.exclude(status=WebhookDeliveryStatus.DELIVERED).update(
                status=WebhookDeliveryStatus.DELIVERED, delivered_at=now, **common
            )
            result = AttemptOutcome.DELIVERED
        else:
            # Fenced: a row another worker claimed since is theirs to schedule.
            mine = rows.filter(status=WebhookDeliveryStatus.SENDING, attempts=claim.fence)
            due = None
            if outcome.gone and not delivery.is_test:
                _pause(
                    delivery.endpoint,
                    reason=f"The receiver answered 410 Gone on {payloads.iso_millis(now)}; "
                    "resume the endpoint when it accepts events again.",
                    now=now,
                )
            elif not delivery.is_test:
                first = (
                    WebhookDelivery.objects.filter(pk=delivery.pk)
                    .values_list("first_attempt_at", flat=True)
                    .first()
                ) or now
                due = next_attempt_at(
                    attempts=claim.fence,
                    first_attempt_at=first,
                    now=now,
                    retry_after=outcome.retry_after,
                )
            if due is None:
                mine.update(status=WebhookDeliveryStatus.FAILED, failed_at=now, **common)
            else:
                mine.update(
                    status=WebhookDeliveryStatus.PENDING,
                    next_attempt_at=due,
                    enqueued_at=None,  # the sweep queues it when it is due
                    **common,
                )
            result = AttemptOutcome.FAILED
        _next_in_line(delivery.endpoint.user_id, now=now)
    log.info(
        "Webhook delivery %s (%s): %s %s",
        delivery.pk,
        delivery.event_name,
        result,
        outcome.status_code or outcome.error,
    )
    return result
