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

from accounts.timezones import zone_named
from commitments.models import EventKind, OutboxEvent
from commitments.outbox import invitation_lock
from lib import deliveries
from notifications import services, tasks, turns
from notifications.models import (
    ChannelKind,
    DigestReason,
    NewsKind,
    NewsWhen,
    NudgeDelivery,
    NudgeDeliveryStatus,
    NudgePair,
    Reminder,
)
from notifications.nudges import CAPPED, news_kind, nudge_recipients
from notifications.selectors import news_when

# An address nobody has an account for gets at most one invitation mail in
# this window: the first ask's, then at most one digest of the later asks.
INVITATION_MAIL_WINDOW = dt.timedelta(days=1)


def nudges_queue_on_commit(delivery_ids: list) -> None:
    deliveries.queue_on_commit(
        tasks.deliver_nudge,
        NudgeDelivery.objects.all(),
        delivery_ids,
        batch_task=tasks.deliver_nudges,
    )


def nudges_publish(delivery_ids: list) -> None:
    """Queue them now, in batches (the sweep, after its commit)."""
    deliveries.publish(
        tasks.deliver_nudge,
        NudgeDelivery.objects.all(),
        delivery_ids,
        batch_task=tasks.deliver_nudges,
    )


def nudge_deliveries_create(*, event: OutboxEvent, now: dt.datetime) -> list[uuid.UUID]:
    """The nudges `event` calls for, once each (unique per event and
    recipient), as each recipient chose for its kind of news (at once, in
    the daily digest, not at all), those that go at once queued after commit.
    Returns the ids of the ones queued (not digests waiting for their time,
    nor held ones)."""
    queued: list[uuid.UUID] = []
    commitment = event.commitment
    # A request to an address with no account: asked, or handed to it.
    if event.kind == EventKind.INVITED or (
        event.kind == EventKind.REASSIGNED
        and event.detail.get("invitationId")
        and not event.detail.get("assigneeId")
    ):
        queued += _invitation_delivery_create(event=event, now=now)
    for recipient in nudge_recipients(event):
        if NudgeDelivery.objects.filter(event=event, recipient=recipient).exists():
            continue
        when = news_when(user_id=recipient.pk, kind=news_kind(event, recipient))
        if when == NewsWhen.OFF:
            continue  # they chose not to hear of it
        if when == NewsWhen.DIGEST:
            fields = _daily(recipient=recipient, now=now)
        else:
            fields = _capped(event=event, recipient=recipient, now=now)
            if not fields.get("is_digest") and fields.get("status") != NudgeDeliveryStatus.HELD:
                fields |= _together(recipient=recipient, now=now)
        delivery = NudgeDelivery.objects.create(
            event=event, recipient=recipient, channel=_channel_kind(recipient), **fields
        )
        if delivery.status == NudgeDeliveryStatus.PENDING and delivery.enqueued_at is not None:
            queued.append(delivery.pk)
    nudges_queue_on_commit(queued)
    # A nudge of a later move may have waited for this event's dispatch
    # (notifications.turns), whether or not it made a nudge of its own.
    parties = {
        commitment.assigner_id,
        commitment.assignee_id,
        event.detail.get("previousAssigneeId"),
    }
    for party_id in {party for party in parties if party is not None}:
        waiting = turns.next_in_line(party_id, commitment.pk, now=now)
        nudges_queue_on_commit([pk for pk in waiting if pk not in queued])
    return queued


def _released(event: OutboxEvent) -> bool:
    return event.kind == EventKind.REASSIGNED and bool(event.detail.get("previousAssigneeId"))


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
    if (
        invitation is None
        or event.commitment.assignee_id is not None
        or NudgeDelivery.objects.filter(event=event, recipient=None).exists()
    ):
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
    commitment = event.commitment
    sender_id = commitment.assigner_id
    # Requests to the one asked (a reassigned commitment's released assignee
    # is told, not asked: not counted).
    if (
        event.kind not in CAPPED
        or sender_id == recipient.pk
        or commitment.assignee_id != recipient.pk
    ):
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


def _under_cap(
    *,
    mine,
    cap: int,
    window: dt.timedelta,
    now: dt.datetime,
    column: str = "counted_at",
    reason: str = DigestReason.CAP,
) -> dict[str, object]:
    """At most `cap` of the deliveries `mine` in any `window`, each counted
    at its `column`: the fields of a new one that goes at once, starts a
    digest (of `reason`), or is held in the waiting one. Call with the pair's
    lock held (`_lock_pair`)."""
    at_once: dict[str, object] = {"next_attempt_at": now, "enqueued_at": now}
    # Locked, so a worker cannot claim it until this commits (then it sees
    # this one held); one already claimed is not pending any more.
    waiting = (
        mine.select_for_update()
        .filter(is_digest=True, digest_reason=reason, status=NudgeDeliveryStatus.PENDING)
        .order_by("next_attempt_at")
        .first()
    )
    if waiting is not None:
        return {"status": NudgeDeliveryStatus.HELD, "digest": waiting}
    counted = list(
        mine.filter(**{f"{column}__gt": now - window})
        .order_by(column)
        .values_list(column, flat=True)
    )
    if len(counted) < cap:
        return at_once | {column: now}
    # Over the cap: a digest, due when the window lets one more nudge through.
    due = max(now, counted[len(counted) - cap] + window)
    return {
        "is_digest": True,
        "digest_reason": reason,
        column: due,
        "next_attempt_at": due,
        "enqueued_at": None,  # the sweep queues it when it is due
    }


def _together(*, recipient, now: dt.datetime) -> dict[str, object]:
    """Moves for one person close together come in one message: the first
    nudge of a quiet spell goes at once; one within NUDGE_COALESCE_WINDOW of
    the last message starts a digest due at the window's end, and the ones
    after it are held in that digest while it waits (the cap's rule, with a
    cap of one message per window per person). Decided under the person's
    own `NudgePair` lock, taken after any pair's (one order, no deadlock)."""
    window = dt.timedelta(seconds=settings.NUDGE_COALESCE_WINDOW)
    if not window:
        return {}
    _lock_pair(sender_id=recipient.pk, recipient_id=recipient.pk)
    return _under_cap(
        mine=NudgeDelivery.objects.filter(recipient=recipient, event__isnull=False),
        cap=1,
        window=window,
        now=now,
        column="coalesce_at",
        reason=DigestReason.TOGETHER,
    )


def next_digest_time(*, recipient, now: dt.datetime) -> dt.datetime:
    """The next DIGEST_HOUR:00 in the person's time zone after `now`."""
    tz = zone_named(getattr(recipient, "timezone", "UTC"))
    local = now.astimezone(tz)
    due = local.replace(hour=settings.DIGEST_HOUR, minute=0, second=0, microsecond=0)
    if due <= local:
        due = (local + dt.timedelta(days=1)).replace(
            hour=settings.DIGEST_HOUR, minute=0, second=0, microsecond=0
        )
    return due.astimezone(dt.UTC)


def _daily(*, recipient, now: dt.datetime) -> dict[str, object]:
    """News the person chose to get in their daily digest: held in the one
    waiting for DIGEST_HOUR, or, none waiting, the first of the next one (a
    digest due then, queued by the sweep). Under the person's own lock."""
    _lock_pair(sender_id=recipient.pk, recipient_id=recipient.pk)
    waiting = (
        NudgeDelivery.objects.select_for_update()
        .filter(
            recipient=recipient,
            is_digest=True,
            digest_reason=DigestReason.DAILY,
            status=NudgeDeliveryStatus.PENDING,
        )
        .order_by("next_attempt_at")
        .first()
    )
    if waiting is not None:
        return {"status": NudgeDeliveryStatus.HELD, "digest": waiting}
    return {
        "is_digest": True,
        "digest_reason": DigestReason.DAILY,
        "next_attempt_at": next_digest_time(recipient=recipient, now=now),
        "enqueued_at": None,
    }


def reminder_delivery_create(*, reminder: Reminder, now: dt.datetime) -> uuid.UUID | None:
    """The delivery of a reminder just written (notifications.reminders), in
    the same transaction: at once, or in the person's digest when a reminder
    already went within REMINDER_CAP_WINDOW (one reminder message an hour).
    Queued after commit; returns its id when it goes at once."""
    recipient = reminder.recipient
    if news_when(user_id=recipient.pk, kind=NewsKind.REMINDERS) == NewsWhen.DIGEST:
        fields = _daily(recipient=recipient, now=now)
    else:
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
