"""Nudge deliveries sent: the leased-send protocol (lib.deliveries) with the
nudges' policy. The worker task (`notifications.tasks.deliver_nudge`) calls
`nudge_send`; rows are made by `notifications.dispatch`.

Policy: the channel is the recipient's choice at send time (they may have
switched or fixed it). A transient failure is retried with back-off (30 s
doubling to 2 h, jitter, `Retry-After` honoured); a permanent one marks the
chat channel broken and falls back to e-mail, as does running out of
DELIVERY_MAX_ATTEMPTS on a chat channel; e-mail that runs out fails. A digest
sends the deliveries it holds with it; a reminder no longer due is not sent
(`cancelled`). The nudges to one person go in the order of the moves: one
whose turn has not come waits without a claim (`notifications.turns`), and
each send that ends queues the next. E-mail carries a Message-ID derived from the delivery id, so
a mail system can recognise the copy of the one duplicate window
(docs/delivery.md).
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from lib import deliveries, leasing
from lib.text import excerpt
from notifications import dispatch, services, turns
from notifications.models import AttemptOutcome, ChannelKind, NudgeDelivery, NudgeDeliveryStatus
from notifications.nudges import delivery_message
from notifications.transports import TransportError, transport_for

log = logging.getLogger(__name__)

BACKOFF_BASE = 30  # seconds before the first retry
BACKOFF_CAP = 2 * 3600  # seconds; the longest wait between two attempts


@dataclass(frozen=True)
class _Claim(deliveries.Claim[NudgeDelivery]):
    kind: str = ChannelKind.EMAIL
    address: str = ""
    channel_id: uuid.UUID | None = None
    # A digest's held deliveries, as attached when it was claimed.
    held: tuple[NudgeDelivery, ...] = ()


def _claim(delivery_id, now: dt.datetime) -> _Claim | None:
    with transaction.atomic():
        found = NudgeDelivery.objects.filter(pk=delivery_id).values_list(
            "recipient_id", "event_id", "event__commitment_id"
        )
        recipient_id, event_id, commitment_id = found.first() or (None, None, None)
        if (
            recipient_id is not None
            and event_id is not None
            and commitment_id is not None  # set with the event (read through its join)
            and turns.waits_for_earlier(
                recipient_id=recipient_id, commitment_id=commitment_id, event_id=event_id, now=now
            )
        ):
            # Not its turn: the send ahead of it queues it when it ends.
            turns.wait_turn(delivery_id, now=now)
            return None
        if not deliveries.claim(NudgeDelivery.objects.all(), pk=delivery_id, now=now):
            return None
        delivery = NudgeDelivery.objects.select_related(
            "recipient",
            "event__commitment__assigner",
            "event__commitment__assignee",
            "event__commitment__invitation",
            "reminder__commitment__assigner",
            "reminder__commitment__assignee",
            "reminder__commitment__invitation",
        ).get(pk=delivery_id)
        channel_id = None
        kind: str  # a ChannelKind value
        if delivery.recipient is None:  # an invitation: its address, by e-mail
            kind, address = ChannelKind.EMAIL, delivery.address
        elif delivery.channel == ChannelKind.EMAIL:
            kind, address = ChannelKind.EMAIL, delivery.recipient.email
        else:
            # The recipient's choice now: they may have switched or fixed it.
            recipient = delivery.recipient
            channel = services.notification_channel_url_lost_record(user=recipient)
            dest = services.destination_for(recipient, channel=channel)
            kind, address = dest.kind, dest.address
            channel_id = dest.channel.pk if dest.channel is not None else None
            if kind != delivery.channel:
                NudgeDelivery.objects.filter(pk=delivery_id).update(channel=kind)
                delivery.channel = kind
        attempt = deliveries.attempt_begin(
            delivery, interrupted="the message may have been sent.", channel=kind, started_at=now
        )
        held: tuple[NudgeDelivery, ...] = ()
        if delivery.is_digest:
            held = tuple(
                delivery.held.filter(status=NudgeDeliveryStatus.HELD)
                .select_related(
                    "event__commitment__assigner",
                    "event__commitment__assignee",
                    "reminder__commitment__assigner",
                    "reminder__commitment__assignee",
                    "reminder__commitment__invitation",
                )
                .order_by("created_at", "id")
            )
    return _Claim(
        delivery,
        attempt.pk,
        kind=kind,
        address=address,
        channel_id=channel_id,
        held=held,
    )


def nudge_send(*, delivery_id) -> str | None:
    """Try to send one nudge now. Returns the attempt's outcome, or None
    when there was nothing to do (not due, already sent, or being sent)."""
    claim = _claim(delivery_id, timezone.now())
    if claim is None:
        return None
    if claim.fence > settings.DELIVERY_MAX_ATTEMPTS:
        # Claimed again and again by workers that died before an outcome.
        return _record_failure(claim, TransportError("Too many attempts were interrupted."))
    try:
        message, left_out = delivery_message(claim.row, held=claim.held)
        if message is None:
            return _record_cancelled(claim)
        status_code = transport_for(claim.kind, claim.address).notify(message)
    except TransportError as exc:
        return _record_failure(claim, exc)
    except Exception as exc:  # a bug or a time limit: log it, retry like a transient error
        log.exception("Delivery %s failed unexpectedly", delivery_id)
        return _record_failure(claim, TransportError(excerpt(repr(exc))))
    # Sent. From here until this commit is the duplicate window: keep it short.
    now = timezone.now()
    with transaction.atomic():
        deliveries.record_delivered(claim, now=now, last_error="")
        deliveries.attempt_end(claim, AttemptOutcome.DELIVERED, status_code=status_code)
        held = NudgeDelivery.objects.filter(status=NudgeDeliveryStatus.HELD)
        # Held reminders no longer due were left out; the rest went with it.
        held.filter(pk__in=left_out).update(status=NudgeDeliveryStatus.CANCELLED, updated_at=now)
        held.filter(pk__in=[h.pk for h in claim.held]).update(
            status=NudgeDeliveryStatus.DELIVERED,
            channel=claim.kind,
            delivered_at=now,
            updated_at=now,
        )
        _queue_next(claim, now=now)
    return AttemptOutcome.DELIVERED


def _queue_next(claim: _Claim, *, now: dt.datetime) -> None:
    """This send is settled: the person's next nudge about the commitment, in
    the order of its moves, may go (notifications.turns)."""
    row = claim.row
    # A nudge has its event (a reminder's delivery has none).
    if row.recipient_id is not None and row.event is not None:
        waiting = turns.next_in_line(row.recipient_id, row.event.commitment_id, now=now)
        dispatch.nudges_queue_on_commit(waiting)


def _record_cancelled(claim: _Claim) -> str:
    """A reminder (and the ones held in it) no longer due: nothing was sent."""
    now = timezone.now()
    with transaction.atomic():
        NudgeDelivery.objects.filter(
            pk__in=[claim.row.pk, *(h.pk for h in claim.held)],
            status__in=[NudgeDeliveryStatus.SENDING, NudgeDeliveryStatus.HELD],
        ).update(status=NudgeDeliveryStatus.CANCELLED, claimed_until=None, updated_at=now)
        deliveries.attempt_end(claim, AttemptOutcome.CANCELLED)
        _queue_next(claim, now=now)
    return AttemptOutcome.CANCELLED


def _record_failure(claim: _Claim, exc: TransportError) -> str:
    now = timezone.now()
    outcome = AttemptOutcome.PERMANENT if exc.permanent else AttemptOutcome.TRANSIENT
    error = excerpt(exc.message, 1000)
    is_chat = claim.kind != ChannelKind.EMAIL
    exhausted = claim.fence >= settings.DELIVERY_MAX_ATTEMPTS
    with transaction.atomic():
        deliveries.attempt_end(claim, outcome, status_code=exc.status_code, error=error)
        if exc.permanent and is_chat and claim.channel_id is not None:
            services.notification_channel_mark_broken(
                channel_id=claim.channel_id, failed_url=claim.address, reason=exc.message
            )
        if is_chat and (exc.permanent or exhausted):
            # Fall back to e-mail, at once, with a fresh count of attempts.
            mine = deliveries.fenced(claim)
            if deliveries.restart(mine, now=now, channel=ChannelKind.EMAIL, last_error=error):
                dispatch.nudges_queue_on_commit([claim.row.pk])
        elif exc.permanent or exhausted:
            deliveries.fail(claim, now=now, last_error=error)
            _queue_next(claim, now=now)
        else:
            wait = leasing.backoff_seconds(
                claim.fence, base=BACKOFF_BASE, cap=BACKOFF_CAP, retry_after=exc.retry_after
            )
            due = now + dt.timedelta(seconds=wait)
            deliveries.retry_later(claim, due=due, now=now, last_error=error)
    log.info("Delivery %s via %s: %s (%s)", claim.row.pk, claim.kind, outcome, error)
    return outcome


def delivery_retry(*, delivery_id) -> bool:
    """Send a failed or waiting delivery again now, with a fresh count of
    attempts (staff, from the admin). Not one that is delivered or being sent."""
    with transaction.atomic():
        rows = NudgeDelivery.objects.filter(
            pk=delivery_id, status__in=[NudgeDeliveryStatus.FAILED, NudgeDeliveryStatus.PENDING]
        )
        updated = deliveries.restart(rows, now=timezone.now())
        if updated:
            dispatch.nudges_queue_on_commit([delivery_id])
    return bool(updated)
