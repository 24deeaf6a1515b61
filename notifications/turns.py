"""Whose turn it is: the nudges to one person about one commitment go out in
the order of the moves that caused them (docs/delivery.md, "In the order of
the moves").

Without this, two moves in a row (a request, then its renegotiation) made two
deliveries that raced: dispatched by different workers, sent by different
workers, the first retried after a hiccup while the second went straight
through, so a person could read the new terms before the old ones.

The order is the outbox's (event ids follow the moves of one commitment: each
move inserts its event under the commitment's row lock). A nudge of a move
waits, without holding a worker, while the same person has a nudge of an
earlier move of the same commitment still to go (pending, waiting for a
retry, or being sent), or an earlier move of that commitment is not
dispatched yet; the send ahead of it (or the dispatch it waited for) queues
it when it ends (`next_in_line`), as webhooks' turns do per endpoint
(`webhooks.turns`). Nudges about different commitments do not wait for each
other: no order between them means anything to the reader, and one person
asked many things at once (an integration's burst) must not have them sent
one at a time. What the nudge cap holds back goes later by design: a digest
waiting for its hour holds nobody up, and the nudges held in it go with it.
Reminders and invitations are not moves and take no turn.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from django.db.models import QuerySet

from commitments.outbox import outbox_event_undispatched_before, outbox_events_first_undispatched
from lib.db import Prepared
from notifications.models import NudgeDelivery, NudgeDeliveryStatus


def _still_to_go(
    recipient_id: uuid.UUID, commitment_id: uuid.UUID, *, now: dt.datetime
) -> QuerySet[NudgeDelivery, Any]:
    """The person's nudges of moves of this commitment that are still to go,
    in the order of the moves: pending (due, or waiting for a retry) or being
    sent; not a digest waiting for its time."""
    return _all_still_to_go(now=now).filter(
        recipient_id=recipient_id, event__commitment_id=commitment_id
    )


def _all_still_to_go(*, now: dt.datetime) -> QuerySet[NudgeDelivery, Any]:
    return (
        NudgeDelivery.objects.filter(
            status__in=[NudgeDeliveryStatus.PENDING, NudgeDeliveryStatus.SENDING],
        )
        .exclude(is_digest=True, status=NudgeDeliveryStatus.PENDING, next_attempt_at__gt=now)
        .order_by("event_id")
    )


def waits_for_earlier(
    *, recipient_id: uuid.UUID, commitment_id: uuid.UUID, event_id: int, now: dt.datetime
) -> bool:
    """A nudge of `event_id` to this person must wait: one of an earlier move
    of the same commitment is still to go, or an earlier move of it is not
    dispatched yet."""
    earlier = _still_to_go(recipient_id, commitment_id, now=now).filter(event_id__lt=event_id)
    if earlier.exists():
        return True
    return outbox_event_undispatched_before(event_id=event_id, commitment_id=commitment_id)


def waits_for_earlier_many(
    nudges: dict[Any, tuple[Any, Any, Any]], *, now: dt.datetime
) -> set[Any]:
    """`waits_for_earlier` for a batch ({delivery id: (recipient, event,
    commitment)}, reminders and invitations with None among them, which
    take no turn): the ids that must wait, in two queries for the batch
    (the people's nudges still to go about these commitments, and the
    commitments' moves not dispatched yet), where each nudge took two. The
    batch's own nudges count, as they do one by one: a later move's waits
    for an earlier one's in the same batch."""
    moves = {
        pk: (str(person), int(event), str(commitment))
        for pk, (person, event, commitment) in nudges.items()
        if person is not None and event is not None and commitment is not None
    }
    if not moves:
        return set()
    people = {person for person, _, _ in moves.values()}
    commitments = {commitment for _, _, commitment in moves.values()}
    first_to_go: dict[tuple[str, str], int] = {}
    for to_go_person, to_go_commitment, to_go_event in _events_to_go_of(
        {uuid.UUID(person) for person in people},
        {uuid.UUID(commitment) for commitment in commitments},
        now,
    ):
        key = (str(to_go_person), str(to_go_commitment))
        first_to_go[key] = min(first_to_go.get(key, to_go_event), to_go_event)
    first_undispatched = outbox_events_first_undispatched(commitment_ids=commitments)
    waiting = set()
    for pk, (person, event, commitment) in moves.items():
        earlier = first_to_go.get((person, commitment))
        undispatched = first_undispatched.get(commitment)
        if (earlier is not None and earlier < event) or (
            undispatched is not None and undispatched < event
        ):
            waiting.add(pk)
    return waiting


def wait_turn_many(delivery_ids: list[Any], *, now: dt.datetime) -> None:
    """`wait_turn` for a batch's nudges, in one statement."""
    if delivery_ids:
        NudgeDelivery.objects.filter(
            pk__in=delivery_ids, status=NudgeDeliveryStatus.PENDING
        ).update(enqueued_at=now, updated_at=now)


def wait_turn(delivery_id: uuid.UUID | str, *, now: dt.datetime) -> None:
    """Leave a due nudge for its turn: pending and due as it is, stamped as
    queued so the sweep leaves it alone for OUTBOX_REQUEUE_AFTER (it queues
    it after that, should the send ahead of it never call `next_in_line`)."""
    NudgeDelivery.objects.filter(pk=delivery_id, status=NudgeDeliveryStatus.PENDING).update(
        enqueued_at=now, updated_at=now
    )


def next_in_line(
    recipient_id: uuid.UUID, commitment_id: uuid.UUID, *, now: dt.datetime
) -> list[uuid.UUID]:
    """After a send of this person's about this commitment ends, or a move
    of it is dispatched: their first nudge about it still to go, stamped as
    queued, when it is due and nobody is sending it (one waiting for a retry
    keeps the rest about that commitment waiting). The caller queues it after
    commit (`dispatch.nudges_queue_on_commit`)."""
    first = _still_to_go(recipient_id, commitment_id, now=now).values_list(
        "pk", "status", "next_attempt_at"
    )
    found = first.first()
    if found is None:
        return []
    delivery_id, status, due_at = found
    if status != NudgeDeliveryStatus.PENDING or due_at > now:
        return []
    NudgeDelivery.objects.filter(pk=delivery_id).update(enqueued_at=now, updated_at=now)
    return [delivery_id]


def _to_go_of(
    people: set[uuid.UUID], commitments: set[uuid.UUID], *, now: dt.datetime
) -> QuerySet[NudgeDelivery, Any]:
    """What is still to go to these people about these commitments."""
    return _all_still_to_go(now=now).filter(
        recipient_id__in=people, event__commitment_id__in=commitments
    )


# Its reads in every dispatch and nudge batch, compiled once per number of
# people and commitments (lib.db.Prepared): the moves still to go, and the
# first of each with its state.
_events_to_go_of = Prepared(
    lambda people, commitments, now: _to_go_of(people, commitments, now=now).values_list(
        "recipient_id", "event__commitment_id", "event_id"
    )
)
_still_to_go_of = Prepared(
    lambda people, commitments, now: _to_go_of(people, commitments, now=now).values_list(
        "pk", "recipient_id", "event__commitment_id", "status", "next_attempt_at"
    )
)


def next_in_line_many(pairs: set[tuple[Any, Any]], *, now: dt.datetime) -> list[uuid.UUID]:
    """`next_in_line` for each (person, commitment) of a batch of dispatched
    moves: one query for the batch, and one UPDATE stamping the ones found."""
    if not pairs:
        return []
    pairs = {(str(person), str(commitment)) for person, commitment in pairs}
    first: dict[tuple[Any, Any], tuple[Any, Any, Any]] = {}
    for delivery_id, person, commitment, status, due_at in _still_to_go_of(
        {uuid.UUID(person) for person, _ in pairs},
        {uuid.UUID(commitment) for _, commitment in pairs},
        now,
    ):
        if (str(person), str(commitment)) in pairs:
            first.setdefault((person, commitment), (delivery_id, status, due_at))
    found = [
        delivery_id
        for delivery_id, status, due_at in first.values()
        if status == NudgeDeliveryStatus.PENDING and due_at <= now
    ]
    if found:
        NudgeDelivery.objects.filter(pk__in=found).update(enqueued_at=now, updated_at=now)
    return found
