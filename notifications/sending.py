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

import contextlib
import datetime as dt
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from lib import deliveries, leasing
from lib.db import Prepared
from lib.text import excerpt
from notifications import dispatch, services, turns
from notifications.models import AttemptOutcome, ChannelKind, NudgeDelivery, NudgeDeliveryStatus
from notifications.nudges import delivery_message
from notifications.transports import TransportError, mail_session, transport_for

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


def _must_wait(delivery_id, found: tuple | None, now: dt.datetime) -> bool:
    """Not its turn (notifications.turns): left for the send ahead of it,
    which queues it when it ends."""
    recipient_id, event_id, commitment_id = found or (None, None, None)
    if (
        recipient_id is not None
        and event_id is not None
        and commitment_id is not None  # set with the event (read through its join)
        and turns.waits_for_earlier(
            recipient_id=recipient_id, commitment_id=commitment_id, event_id=event_id, now=now
        )
    ):
        turns.wait_turn(delivery_id, now=now)
        return True
    return False


def _loaded():
    """Deliveries with everything a send reads, unordered: the model's
    default ordering cost this load (nine tables' columns) more to compile
    than to run (1.76 against 0.99 ms)."""
    return NudgeDelivery.objects.order_by().select_related(
        "recipient",
        "event__commitment__assigner",
        "event__commitment__assignee",
        "event__commitment__invitation",
        "reminder__commitment__assigner",
        "reminder__commitment__assignee",
        "reminder__commitment__invitation",
    )


# A batch's reads, compiled once per batch size (lib.db.Prepared): who each
# nudge goes to about which move, and the claimed rows with all a send reads.
_whose_turn_of = Prepared(
    lambda ids: (
        NudgeDelivery.objects.filter(pk__in=ids)
        .order_by()
        .values_list("pk", "recipient_id", "event_id", "event__commitment_id")
    )
)
_loaded_many = Prepared(lambda ids: _loaded().filter(pk__in=ids))


def _claim(delivery_id, now: dt.datetime) -> _Claim | None:
    with transaction.atomic():
        found = NudgeDelivery.objects.filter(pk=delivery_id).values_list(
            "recipient_id", "event_id", "event__commitment_id"
        )
        if _must_wait(delivery_id, found.first(), now):
            return None
        if not deliveries.claim(NudgeDelivery.objects.all(), pk=delivery_id, now=now):
            return None
        return _begun([_loaded().get(pk=delivery_id)], now)[0]


def _claim_many(delivery_ids: list, now: dt.datetime) -> list[_Claim]:
    """`_claim` for a batch: whose turn it is (one read of the batch, then
    the turns of its nudges of moves in two, `turns.waits_for_earlier_many`),
    claimed in one statement, loaded in one, their attempts begun in two.
    In the order given."""
    ids = []
    for delivery_id in delivery_ids:
        with contextlib.suppress(ValueError):
            ids.append(uuid.UUID(str(delivery_id)))
    with transaction.atomic():
        found = {
            pk: (person, event, commitment) for pk, person, event, commitment in _whose_turn_of(ids)
        }
        waiting = turns.waits_for_earlier_many(found, now=now)
        turns.wait_turn_many(list(waiting), now=now)
        ready = [pk for pk in ids if pk in found and pk not in waiting]
        taken = set(deliveries.claim_many(NudgeDelivery.objects.all(), pks=ready, now=now))
        loaded = {row.pk: row for row in _loaded_many(list(taken))}
        return _begun([loaded[pk] for pk in ready if pk in loaded], now)


def _begun(rows: list[NudgeDelivery], now: dt.datetime) -> list[_Claim]:
    """Claimed rows, in the claim's transaction: where each goes now, its
    attempt written (the ones dead workers left open closed), a digest's
    held deliveries attached."""
    where: list[tuple[str, str, uuid.UUID | None]] = []
    for delivery in rows:
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
                NudgeDelivery.objects.filter(pk=delivery.pk).update(channel=kind)
                delivery.channel = kind
        where.append((kind, address, channel_id))
    attempts = deliveries.attempts_begin(
        list(rows),
        interrupted="the message may have been sent.",
        fields=[{"channel": kind, "started_at": now} for kind, _, _ in where],
    )
    claims = []
    for delivery, attempt, (kind, address, channel_id) in zip(rows, attempts, where, strict=True):
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
        claims.append(
            _Claim(
                delivery,
                attempt.pk,
                kind=kind,
                address=address,
                channel_id=channel_id,
                held=held,
            )
        )
    return claims


def nudge_send(*, delivery_id) -> str | None:
    """Try to send one nudge now. Returns the attempt's outcome, or None
    when there was nothing to do (not due, already sent, or being sent)."""
    claim = _claim(delivery_id, timezone.now())
    if claim is None:
        return None
    return _send_claimed(claim)


def _send_claimed(claim: _Claim, *, after: list[tuple[Any, Any]] | None = None) -> str:
    """Send a claimed nudge and record its outcome. With `after` (a batch),
    a delivered nudge that held nothing is recorded in one statement, and
    its person and commitment are added to `after`, for the batch to queue
    their next in line once it is over (`turns.next_in_line_many`)."""
    delivery_id = claim.row.pk
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
    if after is not None and not claim.held and not left_out:
        # One statement, no transaction: its outcome, its attempt's.
        deliveries.record_delivered_ended(
            claim, now=now, attempt={"status_code": status_code}, last_error=""
        )
        row = claim.row
        if row.recipient_id is not None and row.event is not None:
            after.append((row.recipient_id, row.event.commitment_id))
        return AttemptOutcome.DELIVERED
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


def nudges_send(*, delivery_ids: list) -> dict[str, int]:
    """A batch (`deliver_nudges`): claimed together (`_claim_many`: whose
    turn it is, one conditional UPDATE for all), then each sent and
    recorded on its own as `nudge_send` does it, in order, over one
    connection to the mail server (`transports.mail_session`); a delivered
    nudge that holds nothing in one statement, its outcome and its
    attempt's together, and the next in line of the people and commitments
    delivered queued once the batch is over, in one query. One that
    fails, even unexpectedly, is recorded (or left to its lease) and the
    rest go on. Sends start only within the batch's window (a third of the
    lease): the ones left then are released and queued again. Returns how
    many ended how."""
    claims = _claim_many(delivery_ids, timezone.now())
    started = time.monotonic()
    outcomes: dict[str, int] = {}
    after: list[tuple[Any, Any]] = []  # (person, commitment) of each delivered
    with mail_session():
        for index, claim in enumerate(claims):
            if time.monotonic() - started > deliveries.batch_window():
                with transaction.atomic():
                    left = deliveries.release(list(claims[index:]), now=timezone.now())
                    dispatch.nudges_queue_on_commit(left)
                outcomes["released"] = len(left)
                break
            try:
                outcome = _send_claimed(claim, after=after)
            except Exception:
                # Not recorded (the database failed?): its lease runs out and
                # the sweep queues it again.
                log.exception("Delivery %s failed in its batch", claim.row.pk)
                outcome = "error"
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    if after:
        # The people's next nudges about these commitments, in the order of
        # the moves: one query for the batch (a worker that dies before this
        # leaves them stamped as queued, for the sweep).
        with transaction.atomic():
            now = timezone.now()
            dispatch.nudges_queue_on_commit(turns.next_in_line_many(set(after), now=now))
    return outcomes


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
