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

import bisect
import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.models import Case, F, Q, Value, When

from accounts.timezones import zone_named
from commitments.models import EventKind, OutboxEvent
from commitments.outbox import invitation_lock
from lib import deliveries
from lib.db import Prepared
from notifications import services, tasks, turns
from notifications.models import (
    ChannelKind,
    DigestReason,
    NewsKind,
    NewsWhen,
    NudgeChannel,
    NudgeDelivery,
    NudgeDeliveryStatus,
    NudgePair,
    Reminder,
)
from notifications.nudges import CAPPED, news_kind, nudge_recipients_many
from notifications.selectors import news_when

# An address nobody has an account for gets at most one invitation mail in
# this window: the first ask's, then at most one digest of the later asks.
INVITATION_MAIL_WINDOW = dt.timedelta(days=1)


# The batch's recipients' channels, compiled once per number of people.
_channels_of = Prepared(lambda ids: NudgeChannel.objects.filter(user_id__in=ids))
# The nudges made already of these events, to people: (event, recipient).
_made_for = Prepared(
    lambda event_ids: (
        NudgeDelivery.objects.filter(event_id__in=event_ids, recipient__isnull=False)
        .order_by()  # a set: the default ordering would only sort
        .values_list("event_id", "recipient_id")
    )
)


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


def nudge_deliveries_create_many(*, events: list[OutboxEvent], now: dt.datetime) -> list[uuid.UUID]:
    """The nudges a batch of events calls for, once each (unique per event
    and recipient), as each recipient chose for its kind of news (at once,
    in the daily digest, not at all), under the nudge cap and coalescing,
    those that go at once queued after commit. Returns the ids of the ones
    queued (not digests waiting for their time, nor held ones).

    A few statements for the batch, not a few per event: the recipients,
    their channels and what was made already are read for all of it; the
    locks of every pair the batch decides for are taken in one statement, in
    the order a single event takes them (by recipient, the pair before the
    person's own), so batches and single dispatches never wait on each other
    in a circle; what the cap and coalescing count is read once and kept up
    to date as the batch decides, event after event in the order of the
    moves, exactly as one dispatch after another would; the rows are written
    in one INSERT. Call inside the dispatch transaction."""
    events = sorted(events, key=lambda event: event.pk)
    queued: list[uuid.UUID] = []
    # A request to an address with no account: asked, or handed to it. Each
    # takes its invitation's lock, before any pair's, in one order (the
    # invitation's, then the moves').
    invitations = [
        event
        for event in events
        if event.kind == EventKind.INVITED
        or (
            event.kind == EventKind.REASSIGNED
            and event.detail.get("invitationId")
            and not event.detail.get("assigneeId")
        )
    ]
    for event in sorted(invitations, key=lambda e: (str(e.commitment.invitation_id), e.pk)):
        queued += _invitation_delivery_create(event=event, now=now)
    wanted = _wanted(events)
    made: list[NudgeDelivery] = []
    if wanted:
        recipients = {recipient.pk: recipient for _, recipient, _ in wanted}
        channels = {c.user_id: c for c in _channels_of(list(recipients))}
        plans = []
        for event, recipient, kind in wanted:
            channel = channels.get(recipient.pk)
            when = channel.news_when(kind) if channel is not None else NewsWhen.NOW
            if when != NewsWhen.OFF:  # they chose not to hear of it
                plans.append((event, recipient, when, channel))
        tallies = _Tallies.load(plans, now=now)
        for event, recipient, when, channel in plans:
            if when == NewsWhen.DIGEST:
                fields = tallies.daily(recipient=recipient, now=now)
            else:
                fields = tallies.capped(event=event, recipient=recipient, now=now)
                if not fields.get("is_digest") and fields.get("status") != NudgeDeliveryStatus.HELD:
                    fields |= tallies.together(recipient=recipient, now=now)
            delivery = NudgeDelivery(
                event=event,
                recipient=recipient,
                channel=_channel_kind(recipient, channel),
                **fields,
            )
            tallies.count(delivery, now=now)
            made.append(delivery)
        NudgeDelivery.objects.bulk_create(made)
    queued += [
        delivery.pk
        for delivery in made
        if delivery.status == NudgeDeliveryStatus.PENDING and delivery.enqueued_at is not None
    ]
    nudges_queue_on_commit(queued)
    # A nudge of a later move may have waited for this event's dispatch
    # (notifications.turns), whether or not it made a nudge of its own.
    parties = set()
    for event in events:
        commitment = event.commitment
        for party_id in (
            commitment.assigner_id,
            commitment.assignee_id,
            event.detail.get("previousAssigneeId"),
        ):
            if party_id is not None:
                parties.add((party_id, commitment.pk))
    waiting = turns.next_in_line_many(parties, now=now)
    nudges_queue_on_commit([pk for pk in waiting if pk not in queued])
    return queued


def _wanted(events: list[OutboxEvent]) -> list[tuple[OutboxEvent, Any, str]]:
    """(event, recipient, kind of news) of each nudge the events call for
    and have not made yet: two queries for the batch."""
    recipients = nudge_recipients_many(events)
    if not any(recipients.values()):
        return []
    made = set(_made_for([event.pk for event in events]))
    return [
        (event, recipient, news_kind(event, recipient))
        for event in events
        for recipient in recipients[event.pk]
        if (event.pk, recipient.pk) not in made
    ]


def _released(event: OutboxEvent) -> bool:
    return event.kind == EventKind.REASSIGNED and bool(event.detail.get("previousAssigneeId"))


def _channel_kind(recipient, channel: NudgeChannel | None) -> str:
    """The channel a nudge to `recipient` goes by, their `channel` row
    loaded already (None: they have none, so e-mail)."""
    if channel is None:
        return ChannelKind.EMAIL
    channel = services.notification_channel_url_lost_record(user=recipient, channel=channel)
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


def _is_capped(event: OutboxEvent, recipient) -> bool:
    """Whether the nudge cap counts this nudge: a request to the one asked
    (a reassigned commitment's released assignee is told, not asked), not
    from themselves."""
    commitment = event.commitment
    return (
        event.kind in CAPPED
        and commitment.assigner_id != recipient.pk
        and commitment.assignee_id == recipient.pk
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
    tally = _Tally()
    for at, older in _newest(mine, column=column, since=now - window, cap=cap, by=[]):
        tally.counted.append(at)
        tally.older = older
    return _decide(tally, cap=cap, window=window, now=now, column=column, reason=reason)


def _newest(
    rows,
    *,
    column: str,
    since: dt.datetime,
    cap: int,
    by: list[str],
    adds: dict[tuple, int] | None = None,
) -> list[tuple]:
    """What the cap needs of `rows` counted (at `column`) after `since`, per
    group of the `by` columns, in one statement, not the whole window's
    history: the group's count, and its newest times, oldest first: every
    one of the newest `cap` when the count and what the caller may still add
    to the group before its last decision (`adds`, by the `by` values; none
    otherwise: one decision) could reach `cap`, else only the newest (which
    carries the count). Rows of (*by, time, how many in the window are older
    than the ones returned).

    The ORM writes the query of the rows; the ranking and the choice around
    it are written here. Django compiles a filter on window functions (its
    QUALIFY emulation) at about four times the cost of the rows' query
    itself, in every batch of dispatches: 3.7-4.6 ms against 0.9
    (docs/benchmarks.md, "A dispatch batch's fixed cost, compose's
    workers")."""
    db = connections[rows.db]
    compiler = (
        rows.filter(**{f"{column}__gt": since})
        .order_by()
        .values_list(*by, column)
        .query.get_compiler(using=rows.db)
    )
    base, params = compiler.as_sql()
    quote = db.ops.quote_name
    keys = [f"ranked.{quote(name)}" for name in by]
    counted = quote(column)
    partition = f"PARTITION BY {', '.join(f'base.{quote(name)}' for name in by)}" if by else ""
    params = [*params, cap, cap]
    # What each group may still gain: its `adds`, nothing for the others.
    gained = "0"
    if adds:
        fields = [rows.model._meta.get_field(name) for name in by]
        match = " AND ".join(f"{key} = %s" for key in keys)
        gained = f"CASE {' '.join([f'WHEN {match} THEN %s'] * len(adds))} ELSE 0 END"
        for values, n in adds.items():
            params += [
                field.get_db_prep_value(value, db)
                for field, value in zip(fields, values, strict=True)
            ]
            params.append(n)
    # Ranked oldest first, so the index on the `by` columns and `column`
    # (delivery_nudge_cap_idx, delivery_coalesce_idx) gives the window its
    # order: the newest of a group has the rank of its count. (Names quoted by
    # the backend, the rows' SQL the ORM's, every value a parameter.)
    sql = (
        f"SELECT {''.join(f'{key}, ' for key in keys)}ranked.{counted}, ranked.tally_rank FROM ("  # noqa: S608
        f"SELECT base.*, ROW_NUMBER() OVER ({partition} ORDER BY base.{counted}) AS tally_rank, "
        f"COUNT(*) OVER ({partition}) AS tally_count FROM ({base}) base"
        ") ranked WHERE ranked.tally_rank = ranked.tally_count"
        " OR (ranked.tally_rank > ranked.tally_count - %s"
        f" AND ranked.tally_count >= %s - {gained})"
    )
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    # As the ORM reads them (on SQLite: UUIDs from text, times made aware).
    converters = compiler.get_converters([expression for expression, _, _ in compiler.select])
    if converters:
        fetched = list(compiler.apply_converters(fetched, converters))
    # The rank of a group's oldest row returned is one more than how many of
    # its rows are older, not returned.
    fetched.sort(key=lambda row: row[-2])
    older: dict[tuple, int] = {}
    for *key, _, rank in fetched:
        older[tuple(key)] = min(older.get(tuple(key), rank), rank - 1)
    return [(*key, at, older[tuple(key)]) for *key, at, _ in fetched]


@dataclass
class _Tally:
    """What `_under_cap` reads of one person's deliveries of one kind: the
    digest waiting, if any, the times counted in the window (sorted), and
    how many more were counted in it before those (`older`, not read: the
    cap needs only its newest `cap`; `_newest`). Read for one `now`."""

    waiting: NudgeDelivery | None = None
    counted: list[dt.datetime] = field(default_factory=list)
    older: int = 0

    def count(self, delivery: NudgeDelivery, *, column: str | None, reason: str) -> None:
        """A delivery of the kind just made: what the next read would see."""
        waits = (
            delivery.is_digest
            and delivery.status == NudgeDeliveryStatus.PENDING
            and delivery.digest_reason == reason
        )
        if waits and (
            self.waiting is None or delivery.next_attempt_at < self.waiting.next_attempt_at
        ):
            self.waiting = delivery
        at = getattr(delivery, column) if column else None
        if at is not None:
            bisect.insort(self.counted, at)


def _decide(
    tally: _Tally,
    *,
    cap: int,
    window: dt.timedelta,
    now: dt.datetime,
    column: str,
    reason: str,
) -> dict[str, object]:
    """`_under_cap`'s rule on what it read: at once, a new digest, or held."""
    if tally.waiting is not None:
        return {"status": NudgeDeliveryStatus.HELD, "digest": tally.waiting}
    counted = [at for at in tally.counted if at > now - window]
    if tally.older + len(counted) < cap:
        return {"next_attempt_at": now, "enqueued_at": now, column: now}
    # Over the cap: a digest, due when the window lets one more nudge through
    # (the `cap`-th newest counted; read whenever the count could reach it).
    assert len(counted) >= cap, "the tally read too few of the newest times"
    due = max(now, counted[len(counted) - cap] + window)
    return {
        "is_digest": True,
        "digest_reason": reason,
        column: due,
        "next_attempt_at": due,
        "enqueued_at": None,  # the sweep queues it when it is due
    }


class _Tallies:
    """For a batch of dispatches (`nudge_deliveries_create_many`): the
    pairs' locks, and what `_under_cap` would read for the nudge cap (per
    pair), coalescing (per person: moves for one person close together come
    in one message, a cap of one per NUDGE_COALESCE_WINDOW counted at
    `coalesce_at`, under the person's own lock) and the daily digest, read
    once for the batch and kept up to date as it decides (`count`)."""

    def __init__(self) -> None:
        self.pairs: dict[tuple[Any, Any], _Tally] = {}  # the cap's, by (sender, recipient)
        self.spells: dict[Any, _Tally] = {}  # coalescing's, by recipient
        self.days: dict[Any, _Tally] = {}  # the daily digest's, by recipient
        # How many of the batch's decisions each may count (what `_newest`
        # reads depends on it).
        self.adds: dict[tuple[Any, Any], int] = {}
        self.spell_adds: dict[Any, int] = {}

    @classmethod
    def load(cls, plans: list, *, now: dt.datetime) -> _Tallies:
        tallies = cls()
        coalescing = bool(settings.NUDGE_COALESCE_WINDOW)
        for event, recipient, when, _ in plans:
            if when == NewsWhen.DIGEST:
                tallies.days.setdefault(recipient.pk, _Tally())
                continue
            if _is_capped(event, recipient):
                pair = (event.commitment.assigner_id, recipient.pk)
                tallies.pairs.setdefault(pair, _Tally())
                tallies.adds[pair] = tallies.adds.get(pair, 0) + 1
            if coalescing:
                tallies.spells.setdefault(recipient.pk, _Tally())
                tallies.spell_adds[recipient.pk] = tallies.spell_adds.get(recipient.pk, 0) + 1
        own = set(tallies.spells) | set(tallies.days)
        _lock_pairs(set(tallies.pairs) | {(person, person) for person in own})
        tallies._read(own, now=now)
        return tallies

    def _read(self, own: set, *, now: dt.datetime) -> None:
        cap_window = dt.timedelta(seconds=settings.NUDGE_CAP_WINDOW)
        senders = {sender for sender, _ in self.pairs}
        capped_people = {recipient for _, recipient in self.pairs}
        digests = Q()
        if self.pairs:
            digests |= Q(
                recipient_id__in=capped_people,
                sender_id__in=senders,
                digest_reason=DigestReason.CAP,
            )
        if self.spells:
            digests |= Q(
                recipient_id__in=set(self.spells),
                event__isnull=False,
                digest_reason=DigestReason.TOGETHER,
            )
        if self.days:
            digests |= Q(recipient_id__in=set(self.days), digest_reason=DigestReason.DAILY)
        if not digests:
            return
        # Locked, as `_under_cap` locks the one it finds (under the pairs'
        # locks, taken above).
        for digest in (
            NudgeDelivery.objects.select_for_update()
            .filter(digests, is_digest=True, status=NudgeDeliveryStatus.PENDING)
            .order_by("next_attempt_at")
        ):
            tally = self._of(digest)
            if tally is not None and tally.waiting is None:
                tally.waiting = digest
        if self.pairs:
            for recipient, sender, at, older in _newest(
                NudgeDelivery.objects.filter(recipient_id__in=capped_people, sender_id__in=senders),
                column="counted_at",
                since=now - cap_window,
                cap=settings.NUDGE_CAP,
                by=["recipient_id", "sender_id"],
                adds={(recipient, sender): n for (sender, recipient), n in self.adds.items()},
            ):
                if (sender, recipient) in self.pairs:
                    self.pairs[sender, recipient].counted.append(at)
                    self.pairs[sender, recipient].older = older
        if self.spells:
            window = dt.timedelta(seconds=settings.NUDGE_COALESCE_WINDOW)
            for recipient, at, older in _newest(
                NudgeDelivery.objects.filter(
                    recipient_id__in=set(self.spells), event__isnull=False
                ),
                column="coalesce_at",
                since=now - window,
                cap=1,
                by=["recipient_id"],
                adds={(person,): n for person, n in self.spell_adds.items()},
            ):
                self.spells[recipient].counted.append(at)
                self.spells[recipient].older = older

    def _of(self, digest: NudgeDelivery) -> _Tally | None:
        if digest.digest_reason == DigestReason.CAP:
            return self.pairs.get((digest.sender_id, digest.recipient_id))
        if digest.digest_reason == DigestReason.TOGETHER:
            return self.spells.get(digest.recipient_id)
        if digest.digest_reason == DigestReason.DAILY:
            return self.days.get(digest.recipient_id)
        return None

    def capped(self, *, event: OutboxEvent, recipient, now: dt.datetime) -> dict[str, object]:
        """How a nudge of `event` to `recipient` goes under the cap: at once,
        in a new digest, or held in the waiting one."""
        if not _is_capped(event, recipient):
            return {"next_attempt_at": now, "enqueued_at": now}
        sender_id = event.commitment.assigner_id
        return {"sender_id": sender_id} | _decide(
            self.pairs[sender_id, recipient.pk],
            cap=settings.NUDGE_CAP,
            window=dt.timedelta(seconds=settings.NUDGE_CAP_WINDOW),
            now=now,
            column="counted_at",
            reason=DigestReason.CAP,
        )

    def together(self, *, recipient, now: dt.datetime) -> dict[str, object]:
        """Coalescing: the first nudge of a quiet spell goes at once; one within
        NUDGE_COALESCE_WINDOW of the last message starts a digest due at the
        window's end, and the ones after it are held in that digest."""
        window = dt.timedelta(seconds=settings.NUDGE_COALESCE_WINDOW)
        if not window:
            return {}
        return _decide(
            self.spells[recipient.pk],
            cap=1,
            window=window,
            now=now,
            column="coalesce_at",
            reason=DigestReason.TOGETHER,
        )

    def daily(self, *, recipient, now: dt.datetime) -> dict[str, object]:
        """`_daily`, on what the batch read."""
        waiting = self.days[recipient.pk].waiting
        if waiting is not None:
            return {"status": NudgeDeliveryStatus.HELD, "digest": waiting}
        return _daily_digest(recipient=recipient, now=now)

    def count(self, delivery: NudgeDelivery, *, now: dt.datetime) -> None:
        """A delivery the batch just decided: counted where the next event's
        reads would find it."""
        key = (delivery.sender_id, delivery.recipient_id)
        if key in self.pairs:
            self.pairs[key].count(delivery, column="counted_at", reason=DigestReason.CAP)
        if delivery.recipient_id in self.spells:
            self.spells[delivery.recipient_id].count(
                delivery, column="coalesce_at", reason=DigestReason.TOGETHER
            )
        if delivery.recipient_id in self.days:
            self.days[delivery.recipient_id].count(delivery, column=None, reason=DigestReason.DAILY)


def _lock_pairs(pairs: set[tuple[Any, Any]]) -> None:
    """`_lock_pair` for many pairs at once, in one order: by recipient, a
    pair before the recipient's own (the order one dispatch takes them in,
    its recipients sorted by id)."""
    if not pairs:
        return
    ordered = sorted(pairs, key=lambda pair: (str(pair[1]), pair[0] == pair[1], str(pair[0])))
    NudgePair.objects.bulk_create(
        [NudgePair(sender_id=sender, recipient_id=recipient) for sender, recipient in ordered],
        ignore_conflicts=True,
    )
    which = Q()
    for sender, recipient in ordered:
        which |= Q(sender_id=sender, recipient_id=recipient)
    own = Case(When(sender_id=F("recipient_id"), then=Value(1)), default=Value(0))
    list(
        NudgePair.objects.select_for_update()
        .filter(which)
        .annotate(own=own)
        .order_by("recipient_id", "own", "sender_id")
        .values_list("pk", flat=True)
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
    return _daily_digest(recipient=recipient, now=now)


def _daily_digest(*, recipient, now: dt.datetime) -> dict[str, object]:
    """The first of the person's next daily digest (none waiting)."""
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
    channel = services.notification_channel_get(user=recipient)
    delivery = NudgeDelivery.objects.create(
        reminder=reminder, recipient=recipient, channel=_channel_kind(recipient, channel), **fields
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
