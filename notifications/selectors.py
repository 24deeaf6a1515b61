"""Reads of the notifications app: which reminders are due, and when a
person wants each kind of news."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet

from accounts.selectors import users_with_verified_primary_email
from commitments.models import Commitment, Status
from commitments.selectors import (
    commitment_list_with_status,
    proposal_open_made_at,
    proposals_open_made_between,
)
from notifications.models import NewsKind, NewsWhen, NudgeChannel, Reminder, ReminderKind

if TYPE_CHECKING:
    from accounts.models import User


EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class DueReminder:
    """A reminder to make: the key (commitment, kind, moment) and whom it is for."""

    commitment: Commitment
    kind: str
    moment: dt.datetime
    recipient_id: uuid.UUID


def _people_reminded() -> QuerySet[User, Any]:
    """Who may get reminders: a proved address, and reminders not turned off
    (no channel row means the defaults: e-mail, reminders at once)."""
    off = NudgeChannel.objects.filter(user_id=OuterRef("pk"), news_reminders=NewsWhen.OFF)
    return users_with_verified_primary_email().exclude(Exists(off)).values("pk")


def _not_made(kind: str, moment_field: str) -> Exists:
    return Exists(
        Reminder.objects.filter(
            commitment_id=OuterRef("pk"), kind=kind, moment=OuterRef(moment_field)
        )
    )


def _due(
    commitment: Commitment, kind: str, moment: dt.datetime | None, recipient_id: uuid.UUID | None
) -> DueReminder:
    # The queries of reminders_due filter on the moment and the person: the
    # nullable columns (a draft's deadline, an invitee's account) are set here.
    assert moment is not None and recipient_id is not None
    return DueReminder(commitment, kind, moment, recipient_id)


def reminders_due(*, now: dt.datetime, limit: int = 500) -> list[DueReminder]:
    """The reminders due at `now` that were never made, at most `limit` of
    each kind: the assignee's the day before an Active commitment's deadline
    (REMINDER_LEAD) and once it has passed; the assigner's once a request has
    waited HANDSHAKE_REMINDER_AFTER for its handshake (since it was last sent:
    `updated_at`, the stamp of the move into Pending_Handshake), and once a
    proposal (a counter-proposal or a request for more time) has waited as
    long for the assigner's answer (since it was made). Nothing whose moment
    is more than REMINDER_LOOKBACK past. Four queries."""
    lead = dt.timedelta(seconds=settings.REMINDER_LEAD)
    lookback = dt.timedelta(seconds=settings.REMINDER_LOOKBACK)
    wait = dt.timedelta(seconds=settings.HANDSHAKE_REMINDER_AFTER)
    people = _people_reminded()
    active = commitment_list_with_status(status=Status.ACTIVE).filter(assignee__in=people)
    due_soon = active.filter(deadline__gt=now, deadline__lte=now + lead).exclude(
        _not_made(ReminderKind.DUE_SOON, "deadline")
    )
    overdue = active.filter(deadline__lte=now, deadline__gt=now - lookback).exclude(
        _not_made(ReminderKind.OVERDUE, "deadline")
    )
    waiting = (
        commitment_list_with_status(status=Status.PENDING_HANDSHAKE)
        .filter(
            assigner__in=people,
            updated_at__lte=now - wait,
            updated_at__gt=now - wait - lookback,
        )
        .exclude(_not_made(ReminderKind.HANDSHAKE_WAITING, "updated_at"))
        # Answered with a counter-proposal: that waits for the assigner now.
        .exclude(
            Exists(
                proposals_open_made_between(after=EPOCH, before=now).filter(
                    commitment_id=OuterRef("pk")
                )
            )
        )
    )
    proposals = (
        proposals_open_made_between(after=now - wait - lookback, before=now - wait)
        .filter(commitment__assigner__in=people)
        .exclude(
            Exists(
                Reminder.objects.filter(
                    commitment_id=OuterRef("commitment_id"),
                    kind=ReminderKind.PROPOSAL_WAITING,
                    moment=OuterRef("created_at"),
                )
            )
        )
    )
    found = [
        _due(c, ReminderKind.DUE_SOON, c.deadline, c.assignee_id)
        for c in due_soon.order_by("deadline")[:limit]
    ]
    found += [
        _due(c, ReminderKind.OVERDUE, c.deadline, c.assignee_id)
        for c in overdue.order_by("deadline")[:limit]
    ]
    found += [
        _due(c, ReminderKind.HANDSHAKE_WAITING, c.updated_at, c.assigner_id)
        for c in waiting.order_by("updated_at")[:limit]
    ]
    found += [
        _due(p.commitment, ReminderKind.PROPOSAL_WAITING, p.created_at, p.commitment.assigner_id)
        for p in proposals[:limit]
    ]
    return found


def reminder_still_due(*, reminder: Reminder) -> bool:
    """Whether a reminder made earlier is still worth sending now (its
    commitment loaded fresh): the commitment is where the reminder found it,
    with the same deadline, or the same request still unanswered."""
    commitment = reminder.commitment
    if reminder.kind == ReminderKind.PROPOSAL_WAITING:
        return proposal_open_made_at(commitment_id=commitment.pk, made_at=reminder.moment)
    if reminder.kind == ReminderKind.HANDSHAKE_WAITING:
        return (
            commitment.status == Status.PENDING_HANDSHAKE
            and commitment.updated_at == reminder.moment
        )
    return commitment.status == Status.ACTIVE and commitment.deadline == reminder.moment


def reminders_turned_off(*, user_id: uuid.UUID) -> bool:
    """Whether the person chose reminders "not at all" (Settings, Notifications)."""
    return NudgeChannel.objects.filter(user_id=user_id, news_reminders=NewsWhen.OFF).exists()


def news_when(*, user_id: uuid.UUID, kind: str) -> str:
    """When news of `kind` (NewsKind) reaches the person (NewsWhen); at once
    when they never chose (no channel row)."""
    channel = NudgeChannel.objects.filter(user_id=user_id).first()
    return channel.news_when(NewsKind(kind)) if channel is not None else NewsWhen.NOW
