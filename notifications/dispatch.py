"""Nudge deliveries made: from an outbox event (the relay's dispatch) or a
reminder, each under its cap, in the caller's transaction, queued after
commit (docs/delivery.md, "The nudge cap").

The nudge cap: an assignee gets at most settings.NUDGE_CAP nudges about one
assigner's requests in any NUDGE_CAP_WINDOW; a person at most one reminder
message per REMINDER_CAP_WINDOW. Decided under a lock on the pair
(`NudgePair`, SELECT ... FOR UPDATE): under the cap a delivery goes at once;
the first one over it becomes a digest, due when the window lets one more
through (queued then by the sweep); the ones after it are held (`held`) and
attached to that digest while it waits. A digest being sent takes no more
(its row is locked while one is attached, so a claim cannot slip in).
"""

from __future__ import annotations

import datetime as dt
import uuid

from django.conf import settings

from commitments.models import EventKind, OutboxEvent
from commitments.outbox import invitation_lock
from lib import deliveries
from notifications import services, tasks, turns
from notifications.models import (
    ChannelKind,
    NudgeDelivery,
    NudgeDeliveryStatus,
    NudgePair,
    Reminder,
)
from notifications.nudges import TELLS_ASSIGNEE, nudge_recipients

# An address nobody has an account for gets at most one invitation mail in
# this window: the first ask's, then at most one digest of the later asks.
INVITATION_MAIL_WINDOW = dt.timedelta(days=1)


def nudges_queue_on_commit(delivery_ids: list) -> None:
    deliveries.queue_on_commit(tasks.deliver_nudge, NudgeDelivery.objects.all(), delivery_ids)


def nudge_deliveries_create(*, event: OutboxEvent, now: dt.datetime) -> list[uuid.UUID]:
    """The nudges `event` calls for, once each (unique per event and
    recipient), those under the cap queued after commit. Returns the ids of
    the ones queued (not digests waiting for their time, nor held ones)."""
    queued: list[uuid.UUID] = []
    if event.kind == EventKind.INVITED:
        queued += _invitation_delivery_create(event=event, now=now)
    for recipient in nudge_recipients(event):
        if NudgeDelivery.objects.filter(event=event, recipient=recipient).exists():
            continue
        fields = _capped(event=event, recipient=recipient, now=now)
        delivery = NudgeDelivery.objects.create(
            event=event, recipient=recipient, channel=_channel_kind(recipient), **fields
        )
        if delivery.status == NudgeDeliveryStatus.PENDING and delivery.enqueued_at is not None:
            queued.append(delivery.pk)
    nudges_queue_on_commit(queued)
    # A nudge of a later move may have waited for this event's dispatch
    # (notifications.turns), whether or not it made a nudge of its own.
    commitment = event.commitment
    parties = {commitment.assigner_id, commitment.assignee_id}
    for party_id in {party for party in parties if party is not None}:
        waiting = turns.next_in_line(party_id, commitment.pk, now=now)
        nudges_queue_on_commit([pk for pk in waiting if pk not in queued])
    return queued


def _channel_kind(recipient) -> str:
    channel = services.notification_channel_url_lost_record(user=recipient)
    return services.destination_for(recipient, channel=channel).kind


def _invitation_delivery_create(*, event: OutboxEvent, now: dt.datetime) -> list[uuid.UUID]:
    """The invitation e-mail of a request to an address with no account yet
    (no recipient user; the address is the invitation's), once per event and
    under the address's cap: at most one invitation mail to an address in
    any INVITATION_MAIL_WINDOW, whoever asks. The first ask goes at once; a
    later one within the window starts a digest due when the window ends,
    and the ones after it wait in that digest (the nudge cap's rule, with a
    cap of one). Decided under the invitation row's lock."""
    invitation = event.commitment.invitation
    if invitation is None or NudgeDelivery.objects.filter(event=event, recipient=None).exists():
        return []
    invitation_lock(invitation_id=invitation.pk)
    fields = _under_cap(
        mine=NudgeDelivery.objects.filter(recipient__isnull=True, address=invitation.email),
        cap=1,
        window=INVITATION_MAIL_WINDOW,
        now=now,
    )
    delivery = NudgeDelivery.objects.create(
        event=event,
        recipient=None,
        address=invitation.email,
        channel=ChannelKind.EMAIL,
        **fields,
    )
    if delivery.status == NudgeDeliveryStatus.PENDING and delivery.enqueued_at is not None:
        return [delivery.pk]
    return []


def _capped(*, event: OutboxEvent, recipient, now: dt.datetime) -> dict[str, object]:
    """How a new nudge of `event` to `recipient` goes: at once, in a new
    digest, or held in the waiting one. Call inside the dispatch transaction."""
    at_once: dict[str, object] = {"next_attempt_at": now, "enqueued_at": now}
    sender_id = event.commitment.assigner_id
    if event.kind not in TELLS_ASSIGNEE or sender_id == recipient.pk:
        return at_once
    _lock_pair(sender_id=sender_id, recipient_id=recipient.pk)
    return {"sender_id": sender_id} | _under_cap(
        mine=NudgeDelivery.objects.filter(recipient=recipient, sender_id=sender_id),
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
        .filter(is_digest=True, status=NudgeDeliveryStatus.PENDING)
        .order_by("next_attempt_at")
        .first()
    )
    if waiting is not None:
        return {"status": NudgeDeliveryStatus.HELD, "digest": waiting}
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
        mine=NudgeDelivery.objects.filter(recipient=recipient, reminder__isnull=False),
        cap=1,
        window=dt.timedelta(seconds=settings.REMINDER_CAP_WINDOW),
        now=now,
    )
    delivery = NudgeDelivery.objects.create(
        reminder=reminder, recipient=recipient, channel=_channel_kind(recipient), **fields
    )
    if delivery.status == NudgeDeliveryStatus.PENDING and delivery.enqueued_at is not None:
        nudges_queue_on_commit([delivery.pk])
        return delivery.pk
    return None


def nudge_deliveries_take_due(*, now: dt.datetime, requeue_after: dt.timedelta, limit: int) -> list:
    """For the sweep: ids of due deliveries nobody is working on, stamped as
    queued. Call inside the sweep's transaction."""
    return deliveries.take_due(
        NudgeDelivery.objects.all(), now=now, requeue_after=requeue_after, limit=limit
    )
