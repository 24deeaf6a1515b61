"""A reminder in a real browser: with a clock the test controls, the assignee
of an accepted commitment gets its reminder the day before the deadline (once),
by the channel they chose, and its link opens the commitment for them."""

from __future__ import annotations

import datetime as dt
import re

from django.utils import timezone

from audit.services import Actor
from commitments import services
from lib import jobs
from notifications import sending
from notifications.models import NudgeDelivery
from notifications.reminders import reminders_create_due
from tests.harness.webhooks import install_clock


def test_a_reminder_reaches_the_assignee_the_day_before_the_deadline(
    page, sign_in, make_user, mailbox, monkeypatch, check_page
):
    lead = make_user("lead@example.com", display_name="Lead")
    knight = make_user("knight@example.com", display_name="Knight")
    clock = install_clock(monkeypatch, timezone.now().replace(microsecond=0))
    deadline = clock.now + dt.timedelta(days=3)
    c = services.commitment_create_draft(
        actor=Actor.for_user(lead),
        assignee=knight,
        description="Send the final media plan",
        deadline=deadline,
    )
    services.commitment_send_for_handshake(actor=Actor.for_user(lead), commitment_id=c.pk)
    services.commitment_accept(actor=Actor.for_user(knight), commitment_id=c.pk)

    # The broker: what is queued is recorded; the scheduler's sends run here.
    queued: list[str] = []
    monkeypatch.setattr(
        jobs, "enqueue", lambda name, arg, *, retry=True: queued.append(str(arg)) or True
    )

    def scheduler() -> int:
        made = reminders_create_due(now=clock.now)
        for delivery in NudgeDelivery.objects.filter(pk__in=queued, reminder__isnull=False):
            sending.nudge_send(delivery_id=delivery.pk)
        queued.clear()
        return made

    sign_in(page, knight)
    page.goto("/settings/notifications/")
    reminders = page.get_by_role("group", name="Reminders")
    assert reminders.get_by_role("radio", name="At once").is_checked()
    check_page(page, "settings-notifications-reminders")

    assert scheduler() == 0  # three days ahead: nothing yet
    clock.advance_to(deadline - dt.timedelta(hours=23))
    assert scheduler() == 1
    clock.advance(minutes=30)
    assert scheduler() == 0  # once

    (sent,) = [m for m in mailbox if m.to == ["knight@example.com"]]
    assert "Send the final media plan" in sent.subject
    link = re.search(r"https?://\S+/commitments/[0-9a-f-]+", sent.body).group(0)
    assert link.startswith(page.live_url)
    page.goto(link)
    assert page.get_by_role("heading", level=1).inner_text() == "Send the final media plan"
    check_page(page, "commitment-reminded")
