"""Nudge deliveries: made from an outbox event, claimed, sent and recorded.

The dispatcher (`delivery`) calls `nudge_deliveries_create` in the
transaction that claims an outbox event, and the workers call `nudge_send`
with a delivery's id. Rows follow `lib.leasing`: a conditional UPDATE claims
a due row with a lease, the attempt is recorded before the send, the send
happens outside any transaction, and the outcome is recorded at once. A
transient failure schedules the next attempt (exponential back-off with
jitter, honouring `Retry-After`); a permanent one marks the chat channel
broken and falls back to e-mail, as does running out of attempts on a chat
channel. E-mail that runs out fails the delivery (visible in admin).

Reminders (notifications.reminders) are deliveries too, with a `reminder`
instead of an `event`, made by `reminder_delivery_create` under a cap of
their own (one reminder message per person per REMINDER_CAP_WINDOW, the rest
in a digest, by the same mechanism as the nudge cap below); one no longer
due when its turn comes is not sent (`cancelled`).

The one window in which a nudge can go out twice: after the request has left
for the service (the HTTP body was sent, the SMTP server has the mail) and
before the "delivered" UPDATE commits, which is the next statement. A worker
that dies in that window, or whose answer never arrives, leaves the delivery
unrecorded; it is sent again when its lease runs out or its retry is due.
Nothing else can send twice: claims are conditional, a stale worker's
results are fenced by the attempt count, and the lease outlasts the task's
hard time limit. E-mail carries a Message-ID derived from the delivery id, so
a mail system can recognise a second copy.

The nudge cap: an assignee gets at most settings.NUDGE_CAP nudges about one
assigner's requests in any NUDGE_CAP_WINDOW (an hour), so a token cannot
flood a person. Decided when the deliveries are made, under a lock on the
pair (`NudgePair`, SELECT ... FOR UPDATE): a nudge under the cap goes out at
once; the first one over it becomes a digest, a delivery due when the window
lets one more through (queued then by the sweep, like a due retry); the ones
after it are held (`held`) and attached to that digest while it waits.
Sending a digest lists its own request and the held ones, and marks those
delivered with it. A digest being sent takes no more: what comes then starts
the next one (the digest row is locked while one is attached, so a claim
cannot slip in between). Nothing is dropped, and every row stays the truth.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from commitments.models import EventKind, OutboxEvent
from lib import jobs, leasing
from lib.text import excerpt
from notifications.channels import destination_for, notification_channel_mark_broken
from notifications.models import (
    AttemptOutcome,
    ChannelKind,
    Delivery,
    DeliveryAttempt,
    DeliveryStatus,
    NudgePair,
    Reminder,
)
from notifications.nudges import (
    TELLS_ASSIGNEE,
    digest_message,
    invitation_message,
    nudge_message,
    nudge_recipients,
    reminder_message,
)
from notifications.selectors import reminder_still_due, reminders_turned_off
from notifications.transports import TransportError, transport_for

log = logging.getLogger(__name__)

# The worker task that sends one nudge (delivery.tasks), named, not imported.
SEND_TASK = "delivery.tasks.deliver"
BACKOFF_BASE = 30  # seconds before the first retry
BACKOFF_CAP = 2 * 3600  # seconds; the longest wait between two attempts


def enqueue_on_commit(delivery_ids: list) -> None:
    """Queue the sends of these deliveries once the transaction commits. A
    publish that fails leaves the row for the next sweep at once."""

    def enqueue() -> None:
        for delivery_id in delivery_ids:
            if not jobs.enqueue(SEND_TASK, str(delivery_id)):
                Delivery.objects.filter(pk=delivery_id).update(enqueued_at=None)

    if delivery_ids:
        transaction.on_commit(enqueue)


def nudge_deliveries_create(*, event: OutboxEvent, now: dt.datetime) -> list[uuid.UUID]:
    """The nudges `event` calls for, once each (unique per event and
    recipient), those under the cap queued after commit. Returns the ids of
    the ones queued (not digests waiting for their time, nor held ones)."""
    queued: list[uuid.UUID] = []
    if event.kind == EventKind.INVITED:
        queued += _invitation_delivery_create(event=event, now=now)
    for recipient in nudge_recipients(event):
        if Delivery.objects.filter(event=event, recipient=recipient).exists():
            continue
        fields = _capped(event=event, recipient=recipient, now=now)
        delivery = Delivery.objects.create(
            event=event, recipient=recipient, channel=destination_for(recipient).kind, **fields
        )
        if delivery.status == DeliveryStatus.PENDING and delivery.enqueued_at is not None:
            queued.append(delivery.pk)
    enqueue_on_commit(queued)
    return queued


def _invitation_delivery_create(*, event: OutboxEvent, now: dt.datetime) -> list[uuid.UUID]:
    """The invitation e-mail of a request to an address with no account yet,
    once per event (no recipient user; the address is the invitation's)."""
    invitation = event.commitment.invitation
    if invitation is None or Delivery.objects.filter(event=event, recipient=None).exists():
        return []
    delivery = Delivery.objects.create(
        event=event,
        recipient=None,
        address=invitation.email,
        channel=ChannelKind.EMAIL,
        next_attempt_at=now,
        enqueued_at=now,
    )
    return [delivery.pk]


def _capped(*, event: OutboxEvent, recipient, now: dt.datetime) -> dict[str, object]:
    """How a new nudge of `event` to `recipient` goes: at once, in a new
    digest, or held in the waiting one. Call inside the dispatch transaction."""
    at_once: dict[str, object] = {"next_attempt_at": now, "enqueued_at": now}
    sender_id = event.commitment.assigner_id
    if event.kind not in TELLS_ASSIGNEE or sender_id == recipient.pk:
        return at_once
    _lock_pair(sender_id=sender_id, recipient_id=recipient.pk)
    return {"sender_id": sender_id} | _under_cap(
        mine=Delivery.objects.filter(recipient=recipient, sender_id=sender_id),
        cap=settings.NUDGE_CAP,
        window=dt.timedelta(seconds=settings.NUDGE_CAP_WINDOW),
        now=now,
    )


def _lock_pair(*, sender_id, recipient_id) -> None:
    """One decision at a time per pair: whoever locks the row first decides
    first. (A person's own reminders lock the pair of them with themselves,
    which no nudge uses: nobody is nudged about their own act.)"""
    NudgePair.objects.bulk_create(
        [NudgePair(sender_id=sender_id, recipient_id=recipient_id)], ignore_conflicts=True
    )
    NudgePair.objects.select_for_update().get(sender_id=sender_id, recipient_id=recipient_id)


def _under_cap(*, mine, cap: int, window: dt.timedelta, now: dt.datetime) -> dict[str, object]:
    """At most `cap` of the deliveries `mine` in any `window`: the fields of
    a new one that goes at once, starts a digest, or is held in the waiting
    digest. Call with the pair's lock held (`_lock_pair`)."""
    at_once: dict[str, object] = {"next_attempt_at": now, "enqueued_at": now}
    # Locked, so a worker cannot claim it until this commits (then it sees
    # this one held); one already claimed is not pending any more.
    waiting = (
        mine.select_for_update()
        .filter(is_digest=True, status=DeliveryStatus.PENDING)
        .order_by("next_attempt_at")
        .first()
    )
    if waiting is not None:
        return {"status": DeliveryStatus.HELD, "digest": waiting}
    counted = list(
        mine.filter(counted_at__gt=now - window)
        .order_by("counted_at")
        .values_list("counted_at", flat=True)
    )
    if len(counted) < cap:
        return at_once | {"counted_at": now}
    # Over the cap: a digest, due when the window lets one more nudge through.
    due = max(now, counted[len(counted) - cap] + window)
    return {
        "is_digest": True,
        "counted_at": due,
        "next_attempt_at": due,
        "enqueued_at": None,  # the sweep queues it when it is due
    }


def reminder_delivery_create(*, reminder: Reminder, now: dt.datetime) -> uuid.UUID | None:
    """The delivery of a reminder just written (notifications.reminders), in
    the same transaction: at once, or in the person's digest when a reminder
    already went within REMINDER_CAP_WINDOW (one reminder message an hour).
    Queued after commit; returns its id when it goes at once."""
    recipient = reminder.recipient
    _lock_pair(sender_id=recipient.pk, recipient_id=recipient.pk)
    fields = _under_cap(
        mine=Delivery.objects.filter(recipient=recipient, reminder__isnull=False),
        cap=1,
        window=dt.timedelta(seconds=settings.REMINDER_CAP_WINDOW),
        now=now,
    )
    delivery = Delivery.objects.create(
        reminder=reminder, recipient=recipient, channel=destination_for(recipient).kind, **fields
    )
    if delivery.status == DeliveryStatus.PENDING and delivery.enqueued_at is not None:
        enqueue_on_commit([delivery.pk])
        return delivery.pk
    return None


def nudge_deliveries_take_due(*, now: dt.datetime, requeue_after: dt.timedelta, limit: int) -> list:
    """For the sweep: ids of due deliveries nobody is working on, stamped as
    queued. Call inside the sweep's transaction."""
    return leasing.take_due(
        Delivery.objects.all(), now=now, requeue_after=requeue_after, limit=limit
    )


# --- sending -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Claim:
    delivery: Delivery
    attempt_id: int
    fence: int  # `attempts` after our claim; a later claimer changes it
    kind: str
    address: str
    channel_id: uuid.UUID | None
    # A digest's held deliveries, as attached when it was claimed.
    held: tuple[Delivery, ...] = ()


def _claim(delivery_id, now: dt.datetime) -> _Claim | None:
    with transaction.atomic():
        lease = dt.timedelta(seconds=settings.DELIVERY_LEASE_SECONDS)
        if not leasing.claim(Delivery.objects.all(), pk=delivery_id, now=now, lease=lease):
            return None
        delivery = Delivery.objects.select_related(
            "recipient",
            "event__commitment__assigner",
            "event__commitment__assignee",
            "event__commitment__invitation",
            "reminder__commitment__assigner",
            "reminder__commitment__assignee",
        ).get(pk=delivery_id)
        # An attempt without an outcome belonged to a worker that died mid-send.
        delivery.attempt_log.filter(outcome="").update(
            outcome=AttemptOutcome.INTERRUPTED,
            error="The worker stopped before recording the outcome; the message may have "
            "been sent.",
        )
        if delivery.recipient is None:  # an invitation: its address, by e-mail
            kind, address, channel_id = ChannelKind.EMAIL, delivery.address, None
        elif delivery.channel == ChannelKind.EMAIL:
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
        held: tuple[Delivery, ...] = ()
        if delivery.is_digest:
            held = tuple(
                delivery.held.filter(status=DeliveryStatus.HELD)
                .select_related(
                    "event__commitment",
                    "reminder__commitment__assigner",
                    "reminder__commitment__assignee",
                )
                .order_by("created_at", "id")
            )
    return _Claim(delivery, attempt.pk, delivery.attempts, kind, address, channel_id, held)


def nudge_send(*, delivery_id) -> str | None:
    """Try to send one nudge now. Returns the attempt's outcome, or None
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
    left_out: list[uuid.UUID] = []
    try:
        delivery = claim.delivery
        if delivery.reminder_id is not None:
            # Only what is still due goes out; the rest is cancelled with it.
            due, left_out = [], []
            turned_off = reminders_turned_off(user_id=delivery.recipient_id)
            for row in (delivery, *claim.held):
                if not turned_off and reminder_still_due(reminder=row.reminder):
                    due.append(row.reminder)
                else:
                    left_out.append(row.pk)
            if not due:
                _record_cancelled(claim, started)
                return AttemptOutcome.CANCELLED
            message = reminder_message(
                recipient=delivery.recipient,
                reminders=due,
                idempotency_key=f"nudge-{delivery.pk}",
            )
        elif delivery.recipient is None:
            message = invitation_message(
                event=delivery.event, idempotency_key=f"nudge-{delivery.pk}"
            )
        elif delivery.is_digest:
            message = digest_message(
                recipient=delivery.recipient,
                sender=delivery.event.commitment.assigner,
                events=[delivery.event, *(h.event for h in claim.held)],
                idempotency_key=f"nudge-{delivery.pk}",
            )
        else:
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
    _record_success(claim, status_code, started, left_out=left_out)
    return AttemptOutcome.DELIVERED


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def _record_cancelled(claim: _Claim, started: float) -> None:
    """A reminder (and the ones held in it) no longer due: nothing was sent."""
    now = timezone.now()
    with transaction.atomic():
        Delivery.objects.filter(
            pk__in=[claim.delivery.pk, *(h.pk for h in claim.held)],
            status__in=[DeliveryStatus.SENDING, DeliveryStatus.HELD],
        ).update(status=DeliveryStatus.CANCELLED, claimed_until=None, updated_at=now)
        DeliveryAttempt.objects.filter(pk=claim.attempt_id).update(
            outcome=AttemptOutcome.CANCELLED, duration_ms=_elapsed_ms(started)
        )


def _record_success(
    claim: _Claim, status_code: int | None, started: float, *, left_out: list | None = None
) -> None:
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
        if left_out:
            # Held reminders no longer due: left out of this digest.
            Delivery.objects.filter(pk__in=left_out, status=DeliveryStatus.HELD).update(
                status=DeliveryStatus.CANCELLED, updated_at=now
            )
        if claim.held:
            # They went out in this digest.
            Delivery.objects.filter(
                pk__in=[h.pk for h in claim.held], status=DeliveryStatus.HELD
            ).update(
                status=DeliveryStatus.DELIVERED,
                channel=claim.kind,
                delivered_at=now,
                updated_at=now,
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
            if mine.update(**leasing.fresh_start(now), channel=ChannelKind.EMAIL, last_error=error):
                enqueue_on_commit([claim.delivery.pk])
        elif exc.permanent or exhausted:
            mine.update(
                status=DeliveryStatus.FAILED, claimed_until=None, last_error=error, updated_at=now
            )
        else:
            wait = leasing.backoff_seconds(
                claim.fence, base=BACKOFF_BASE, cap=BACKOFF_CAP, retry_after=exc.retry_after
            )
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


def delivery_retry(*, delivery_id) -> bool:
    """Send a failed or waiting delivery again now, with a fresh count of
    attempts (staff, from the admin). Not one that is delivered or being sent."""
    now = timezone.now()
    with transaction.atomic():
        updated = Delivery.objects.filter(
            pk=delivery_id, status__in=[DeliveryStatus.FAILED, DeliveryStatus.PENDING]
        ).update(**leasing.fresh_start(now))
        if updated:
            enqueue_on_commit([delivery_id])
    return bool(updated)
