"""The outbox dispatcher: outbox events become deliveries, deliveries get sent.

The database is the truth; Celery only carries ids, and any message may be
lost, late or delivered twice:

1. A commitments service writes an `OutboxEvent` in the transaction of the
   change and, once it commits, calls `outbox_publish_event(event_id=...)`
   (named by settings.OUTBOX_PUBLISHER, so `commitments` never learns of
   Celery), which queues `dispatch_event(id)`. That publish is tried once,
   bounded by BROKER_TIMEOUT, and its failure only logged.
2. `outbox_event_dispatch` claims the event with a conditional UPDATE
   (`dispatched_at IS NULL`), writes its `Delivery` rows (unique per event,
   recipient and purpose) and marks it dispatched, in one transaction; after
   commit it queues `deliver(id)` for each new delivery.
3. `delivery_send` claims a delivery with a conditional UPDATE (due `pending`,
   or `sending` whose lease ran out because its worker died), records the
   attempt, sends outside any transaction, and records the outcome at once.
   A transient failure schedules the next attempt in `next_attempt_at`
   (exponential back-off with jitter); a permanent one marks the chat channel
   broken and falls back to e-mail; so does running out of attempts on a
   chat channel. E-mail that runs out fails the delivery (visible in admin).
4. `outbox_sweep` (beat, every OUTBOX_SWEEP_INTERVAL s) queues what is due and
   was never picked up: undispatched events, due deliveries and deliveries
   whose lease expired. It claims them with SELECT ... FOR UPDATE SKIP LOCKED
   and stamps them, so concurrent sweeps do not queue the same row.

The one window in which a message can go out twice: after the request has
left for the service (the HTTP body was sent, the SMTP server has the mail)
and before the "delivered" UPDATE commits, which is the next statement. A
worker that dies in that window (killed, out of memory, the machine gone), or
whose answer never arrives (the service took the message but the connection
broke or timed out), leaves the delivery unrecorded; it is sent again when its
lease runs out or its retry is due. Nothing else can send twice: claims are
conditional UPDATEs, a stale worker's results are fenced by the attempt count,
and the lease (DELIVERY_LEASE_SECONDS) outlasts the task's hard time limit.
E-mail carries a Message-ID derived from the delivery id, so a mail system can
recognise a second copy.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from commitments.models import OutboxEvent
from integrations.channels import destination_for, notification_channel_mark_broken
from integrations.models import (
    AttemptOutcome,
    ChannelKind,
    Delivery,
    DeliveryAttempt,
    DeliveryPurpose,
    DeliveryStatus,
)
from integrations.nudges import nudge_message, nudge_recipients
from integrations.transports import TransportError, excerpt, transport_for

log = logging.getLogger(__name__)

BACKOFF_BASE = 30  # seconds before the first retry
BACKOFF_CAP = 2 * 3600  # seconds; the longest wait between two attempts
SWEEP_BATCH = 500


def backoff_seconds(attempts: int, *, retry_after: float | None = None) -> float:
    """Wait before attempt `attempts + 1`: doubling from BACKOFF_BASE up to
    BACKOFF_CAP, with jitter in [75%, 100%] so retries of many rows spread out
    and each wait is still longer than the one before (until the cap)."""
    delay = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** max(0, attempts - 1))
    delay *= random.uniform(0.75, 1.0)  # noqa: S311 (not cryptographic)
    if retry_after:
        delay = max(delay, min(retry_after, BACKOFF_CAP))
    return delay


# --- publishing --------------------------------------------------------------------


def _publish(task_name: str, arg, *, retry: bool = True) -> bool:
    """Queue `task_name(arg)`. Never raises: the publish is bounded by the
    broker settings (BROKER_TIMEOUT, CELERY_TASK_PUBLISH_RETRY_POLICY), and a
    failure leaves the row for the sweep. `retry=False` tries once: for
    requests, which must not wait on a broker that does not answer."""
    from integrations import tasks  # tasks import this module

    try:
        getattr(tasks, task_name).apply_async(args=[arg], retry=retry)
    except Exception:
        log.warning(
            "Could not queue %s(%s); the sweep will pick it up.", task_name, arg, exc_info=True
        )
        return False
    return True


def outbox_publish_event(*, event_id: int) -> None:
    """Queue the dispatch of one outbox event. `commitments` calls it (through
    settings.OUTBOX_PUBLISHER) after the transaction that wrote the event has
    committed. Runs no query; tried once, without retries, since the caller may
    be a request that must not wait on a broker. A lost publish delays the
    nudge until the next sweep; it never loses it."""
    _publish("dispatch_event", event_id, retry=False)


def _enqueue_deliveries_on_commit(delivery_ids: list) -> None:
    def enqueue() -> None:
        for delivery_id in delivery_ids:
            if not _publish("deliver", str(delivery_id)):
                # Let the next sweep take it rather than wait OUTBOX_REQUEUE_AFTER.
                Delivery.objects.filter(pk=delivery_id).update(enqueued_at=None)

    if delivery_ids:
        transaction.on_commit(enqueue)


# --- dispatch ----------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedDelivery:
    recipient: object
    purpose: str
    channel: str


def _plan_nudges(event: OutboxEvent) -> list[PlannedDelivery]:
    return [
        PlannedDelivery(
            recipient=recipient,
            purpose=DeliveryPurpose.NUDGE,
            channel=destination_for(recipient).kind,
        )
        for recipient in nudge_recipients(event)
    ]


# Each planner turns an event into the deliveries of one purpose. Outbound
# webhooks add theirs here.
PLANNERS: list[Callable[[OutboxEvent], list[PlannedDelivery]]] = [_plan_nudges]


def outbox_event_dispatch(*, event_id: int) -> list[uuid.UUID]:
    """Turn one outbox event into its deliveries, once. Returns the ids of the
    deliveries created (empty when another worker had already done it)."""
    now = timezone.now()
    try:
        with transaction.atomic():
            claimed = OutboxEvent.objects.filter(pk=event_id, dispatched_at__isnull=True).update(
                dispatched_at=now, dispatch_attempts=F("dispatch_attempts") + 1
            )
            if not claimed:
                return []
            event = OutboxEvent.objects.select_related(
                "commitment__assigner", "commitment__assignee"
            ).get(pk=event_id)
            created: list[uuid.UUID] = []
            for plan in (p for planner in PLANNERS for p in planner(event)):
                delivery, is_new = Delivery.objects.get_or_create(
                    event=event,
                    recipient=plan.recipient,
                    purpose=plan.purpose,
                    defaults={"channel": plan.channel, "next_attempt_at": now, "enqueued_at": now},
                )
                if is_new:
                    created.append(delivery.pk)
            _enqueue_deliveries_on_commit(created)
    except Exception:
        # Left undispatched; the sweep tries again after a back-off.
        attempts = (
            OutboxEvent.objects.filter(pk=event_id)
            .values_list("dispatch_attempts", flat=True)
            .first()
        ) or 0
        OutboxEvent.objects.filter(pk=event_id, dispatched_at__isnull=True).update(
            dispatch_attempts=attempts + 1,
            next_attempt_at=now + dt.timedelta(seconds=backoff_seconds(attempts + 1)),
        )
        raise
    return created


# --- delivery ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Claim:
    delivery: Delivery
    attempt_id: int
    fence: int  # `attempts` after our claim; a later claimer changes it
    kind: str
    address: str
    channel_id: uuid.UUID | None


def _claim(delivery_id, now: dt.datetime) -> _Claim | None:
    lease = now + dt.timedelta(seconds=settings.DELIVERY_LEASE_SECONDS)
    with transaction.atomic():
        claimed = (
            Delivery.objects.filter(pk=delivery_id)
            .filter(
                Q(status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
                | Q(status=DeliveryStatus.SENDING, claimed_until__lt=now)
            )
            .update(
                status=DeliveryStatus.SENDING,
                claimed_until=lease,
                attempts=F("attempts") + 1,
                updated_at=now,
            )
        )
        if not claimed:
            return None
        delivery = Delivery.objects.select_related(
            "recipient", "event__commitment__assigner", "event__commitment__assignee"
        ).get(pk=delivery_id)
        # An attempt without an outcome belonged to a worker that died mid-send.
        delivery.attempt_log.filter(outcome="").update(
            outcome=AttemptOutcome.INTERRUPTED,
            error="The worker stopped before recording the outcome; the message may have "
            "been sent.",
        )
        if delivery.channel == ChannelKind.EMAIL:
            kind, address, channel_id = ChannelKind.EMAIL, delivery.recipient.email, None
        else:
            # The recipient's choice now: they may have switched or fixed it.
            dest = destination_for(delivery.recipient)
            kind, address = dest.kind, dest.address
            channel_id = dest.channel.pk if dest.channel is not None else None
            if kind != delivery.channel:
                Delivery.objects.filter(pk=delivery_id).update(channel=kind)
                delivery.channel = kind
        attempt = DeliveryAttempt.objects.create(delivery=delivery, channel=kind, started_at=now)
    return _Claim(delivery, attempt.pk, delivery.attempts, kind, address, channel_id)


def delivery_send(*, delivery_id) -> str | None:
    """Try to send one delivery now. Returns the attempt's outcome, or None
    when there was nothing to do (not due, already sent, or being sent)."""
    claim = _claim(delivery_id, timezone.now())
    if claim is None:
        return None
    started = time.monotonic()
    if claim.fence > settings.DELIVERY_MAX_ATTEMPTS:
        # Claimed again and again by workers that died before an outcome.
        return _record_failure(
            claim, TransportError("Too many attempts were interrupted."), started
        )
    try:
        delivery = claim.delivery
        message = nudge_message(
            event=delivery.event,
            recipient=delivery.recipient,
            idempotency_key=f"nudge-{delivery.pk}",
        )
        status_code = transport_for(claim.kind, claim.address).notify(message)
    except TransportError as exc:
        return _record_failure(claim, exc, started)
    except Exception as exc:  # a bug or a time limit: log it, retry like a transient error
        log.exception("Delivery %s failed unexpectedly", delivery_id)
        return _record_failure(claim, TransportError(excerpt(repr(exc))), started)
    # Sent. From here until this commit is the duplicate window: keep it short.
    _record_success(claim, status_code, started)
    return AttemptOutcome.DELIVERED


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def _record_success(claim: _Claim, status_code: int | None, started: float) -> None:
    now = timezone.now()
    with transaction.atomic():
        # Not fenced: whoever holds the row now, the message did go out.
        Delivery.objects.filter(pk=claim.delivery.pk).exclude(
            status=DeliveryStatus.DELIVERED
        ).update(
            status=DeliveryStatus.DELIVERED,
            delivered_at=now,
            claimed_until=None,
            last_error="",
            updated_at=now,
        )
        DeliveryAttempt.objects.filter(pk=claim.attempt_id).update(
            outcome=AttemptOutcome.DELIVERED,
            duration_ms=_elapsed_ms(started),
            status_code=status_code,
        )


def _record_failure(claim: _Claim, exc: TransportError, started: float) -> str:
    now = timezone.now()
    outcome = AttemptOutcome.PERMANENT if exc.permanent else AttemptOutcome.TRANSIENT
    error = excerpt(exc.message, 1000)
    with transaction.atomic():
        DeliveryAttempt.objects.filter(pk=claim.attempt_id).update(
            outcome=outcome,
            duration_ms=_elapsed_ms(started),
            status_code=exc.status_code,
            error=error,
        )
        # Fenced: if the lease ran out and someone else claimed the row, the
        # row is theirs to schedule.
        mine = Delivery.objects.filter(
            pk=claim.delivery.pk, status=DeliveryStatus.SENDING, attempts=claim.fence
        )
        is_chat = claim.kind != ChannelKind.EMAIL
        exhausted = claim.fence >= settings.DELIVERY_MAX_ATTEMPTS
        if exc.permanent and is_chat and claim.channel_id is not None:
            notification_channel_mark_broken(
                channel_id=claim.channel_id, failed_url=claim.address, reason=exc.message
            )
        if is_chat and (exc.permanent or exhausted):
            # Fall back to e-mail, at once, with a fresh count of attempts.
            if mine.update(
                status=DeliveryStatus.PENDING,
                channel=ChannelKind.EMAIL,
                attempts=0,
                next_attempt_at=now,
                claimed_until=None,
                enqueued_at=now,
                last_error=error,
                updated_at=now,
            ):
                _enqueue_deliveries_on_commit([claim.delivery.pk])
        elif exc.permanent or exhausted:
            mine.update(
                status=DeliveryStatus.FAILED, claimed_until=None, last_error=error, updated_at=now
            )
        else:
            wait = backoff_seconds(claim.fence, retry_after=exc.retry_after)
            mine.update(
                status=DeliveryStatus.PENDING,
                next_attempt_at=now + dt.timedelta(seconds=wait),
                claimed_until=None,
                enqueued_at=None,  # the sweep queues it when it is due
                last_error=error,
                updated_at=now,
            )
    log.info("Delivery %s via %s: %s (%s)", claim.delivery.pk, claim.kind, outcome, error)
    return outcome


# --- sweep ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepResult:
    events: int
    deliveries: int


def outbox_sweep(*, now: dt.datetime | None = None) -> SweepResult:
    """Queue what is due and nobody is working on."""
    now = now or timezone.now()
    grace = dt.timedelta(seconds=settings.OUTBOX_SWEEP_GRACE)
    requeue_after = dt.timedelta(seconds=settings.OUTBOX_REQUEUE_AFTER)
    with transaction.atomic():
        event_ids = list(
            OutboxEvent.objects.select_for_update(skip_locked=True)
            .filter(dispatched_at__isnull=True, next_attempt_at__lte=now - grace)
            .order_by("next_attempt_at")
            .values_list("id", flat=True)[:SWEEP_BATCH]
        )
        if event_ids:
            # Not again before OUTBOX_REQUEUE_AFTER (if this message is lost too).
            OutboxEvent.objects.filter(pk__in=event_ids, dispatched_at__isnull=True).update(
                next_attempt_at=now + requeue_after
            )
        due = Q(status=DeliveryStatus.PENDING, next_attempt_at__lte=now) | Q(
            status=DeliveryStatus.SENDING, claimed_until__lt=now
        )
        not_just_queued = Q(enqueued_at__isnull=True) | Q(enqueued_at__lte=now - requeue_after)
        delivery_ids = list(
            Delivery.objects.select_for_update(skip_locked=True)
            .filter(due & not_just_queued)
            .order_by("next_attempt_at")
            .values_list("id", flat=True)[:SWEEP_BATCH]
        )
        if delivery_ids:
            Delivery.objects.filter(pk__in=delivery_ids).update(enqueued_at=now)

        def enqueue() -> None:
            for event_id in event_ids:
                _publish("dispatch_event", event_id)
            for delivery_id in delivery_ids:
                _publish("deliver", str(delivery_id))

        transaction.on_commit(enqueue)
    if event_ids or delivery_ids:
        log.info(
            "Sweep queued %d event(s) and %d delivery(ies).", len(event_ids), len(delivery_ids)
        )
    return SweepResult(events=len(event_ids), deliveries=len(delivery_ids))


def delivery_retry(*, delivery_id) -> bool:
    """Send a failed or waiting delivery again now, with a fresh count of
    attempts (staff, from the admin). Not one that is delivered or being sent."""
    now = timezone.now()
    with transaction.atomic():
        updated = Delivery.objects.filter(
            pk=delivery_id, status__in=[DeliveryStatus.FAILED, DeliveryStatus.PENDING]
        ).update(
            status=DeliveryStatus.PENDING,
            attempts=0,
            next_attempt_at=now,
            claimed_until=None,
            enqueued_at=now,
            updated_at=now,
        )
        if updated:
            _enqueue_deliveries_on_commit([delivery_id])
    return bool(updated)
