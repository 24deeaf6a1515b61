"""Reminders: the scheduler's side (docs/reminders.md).

Beat runs `notifications.tasks.remind` every REMINDER_INTERVAL seconds, which
calls `reminders_create_due`: each reminder the selector finds due
(`notifications.selectors.reminders_due`) is written once, keyed by
(commitment, kind, moment) in the database, in the same transaction as its
`NudgeDelivery`; from there it is sent like any nudge (leased, retried, swept,
through the person's channel), under a cap of its own: one reminder message
per person per REMINDER_CAP_WINDOW, the others waiting in one digest. A
scheduler that runs twice, two schedulers at once, or one that dies after
writing cannot make a second reminder: the unique key refuses it. One that
dies before committing wrote nothing, and the next run makes it.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import transaction

from notifications import dispatch
from notifications.models import Reminder
from notifications.selectors import reminders_due

log = logging.getLogger(__name__)


def reminders_create_due(*, now: dt.datetime) -> int:
    """Write the reminders due at `now` and their deliveries (queued after
    commit, or held for the person's digest). Returns how many were made."""
    made = 0
    for due in reminders_due(now=now):
        with transaction.atomic():
            reminder, created = Reminder.objects.get_or_create(
                commitment=due.commitment,
                kind=due.kind,
                moment=due.moment,
                defaults={"recipient_id": due.recipient_id, "created_at": now},
            )
            if created:
                dispatch.reminder_delivery_create(reminder=reminder, now=now)
                made += 1
    if made:
        log.info("Made %d reminder(s).", made)
    return made
