"""Reminders (issue 15, point 3), with a clock the test controls: the
assignee the day before an Active commitment's deadline and when it passes,
the assigner when a request has waited two days for its handshake; each
made once (a unique key in the database), sent like a nudge through the
person's channel, at most one reminder message per person per hour (a
digest), and not at all for someone who turned them off. The scheduler runs
here as beat would run it (`notifications.tasks.remind`), and what it queues runs
through the real send task; tests/relay/test_reminder_worker.py does the
same with real worker processes."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest
from django.core import mail
from django.db import connection
from django.urls import reverse

from audit.services import Actor
from commitments import services
from commitments.models import Commitment
from lib import jobs
from notifications.models import (
    ChannelKind,
    NudgeChannel,
    NudgeDelivery,
    NudgeDeliveryStatus,
    Reminder,
    ReminderKind,
)
from notifications.reminders import reminders_create_due
from notifications.services import notification_channel_set
from notifications.tasks import deliver_nudge, remind
from relay.outbox import outbox_sweep
from tests.harness.services import FakeService
from tests.harness.webhooks import install_clock

T0 = dt.datetime(2030, 3, 1, 9, 0, tzinfo=dt.UTC)
SITE = "https://commitments.example.com"
DAY = dt.timedelta(days=1)


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.SITE_URL = SITE
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    mail.outbox = []


@pytest.fixture
def clock(monkeypatch):
    return install_clock(monkeypatch, T0)


@pytest.fixture
def worker(monkeypatch):
    """The broker and a worker in this process: records what is queued, and
    `run()` runs the sends of reminders (the nudges of the requests made to
    set the scene are not what these tests are about)."""
    queued: list[tuple[Any, str]] = []  # (a Celery task, untyped, its argument)

    def record(task_name, arg, *, retry=True):
        queued.append((task_name, str(arg)))
        return True

    monkeypatch.setattr(jobs, "enqueue", record)

    class Worker:
        def remind(self, clock) -> int:
            """Beat's reminder task at the clock's time, then the sends it queued."""
            made = remind()
            self.run()
            return made

        def run(self) -> None:
            while queued:
                task, arg = queued.pop(0)
                if (
                    task is deliver_nudge
                    and NudgeDelivery.objects.filter(pk=arg, reminder__isnull=False).exists()
                ):
                    task(arg)

        def sweep(self, clock) -> None:
            outbox_sweep(now=clock.now)
            self.run()

    return Worker()


def pending(assigner, assignee, deadline, description="Ship the quarterly report"):
    lead = Actor.for_user(assigner)
    c = services.commitment_create_draft(
        actor=lead, assignee=assignee, description=description, deadline=deadline
    )
    services.commitment_send_for_handshake(actor=lead, commitment_id=c.pk)
    c.refresh_from_db()
    return c


def active(assigner, assignee, deadline, description="Ship the quarterly report"):
    c = pending(assigner, assignee, deadline, description)
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=c.pk)
    c.refresh_from_db()
    return c


def reminders_to(email: str) -> list:
    return [m for m in mail.outbox if m.to == [email] and "remind" in m.subject.lower()]


def url_of(commitment) -> str:
    return SITE + reverse("commitment_detail", args=[commitment.pk])


@pytest.mark.django_db(transaction=True)
def test_the_assignee_is_reminded_the_day_before_the_deadline_once(
    clock, worker, assigner, assignee
):
    deadline = T0 + dt.timedelta(hours=40)
    c = active(assigner, assignee, deadline)
    assert worker.remind(clock) == 0  # 40 hours ahead: not yet
    clock.advance_to(deadline - DAY + dt.timedelta(minutes=1))
    assert worker.remind(clock) == 1
    (sent,) = reminders_to("knight@example.com")
    assert sent.subject == "Reminder: Due soon: Ship the quarterly report"
    assert url_of(c) in sent.body
    # Not twice: the scheduler again, later, and a sweep.
    for _ in range(3):
        clock.advance(minutes=5)
        assert worker.remind(clock) == 0
        worker.sweep(clock)
    assert len(reminders_to("knight@example.com")) == 1
    (reminder,) = Reminder.objects.all()
    assert (reminder.kind, reminder.moment, reminder.recipient) == (
        ReminderKind.DUE_SOON,
        deadline,
        assignee,
    )
    assert reminder.delivery.status == NudgeDeliveryStatus.DELIVERED
    # The assigner heard nothing of it.
    assert reminders_to("lead@example.com") == []


@pytest.mark.django_db(transaction=True)
def test_the_assignee_is_reminded_once_when_the_deadline_passes(clock, worker, assigner, assignee):
    deadline = T0 + dt.timedelta(hours=3)
    c = active(assigner, assignee, deadline)
    worker.remind(clock)  # the day-before reminder, at once (less than a day left)
    clock.advance_to(deadline + dt.timedelta(minutes=2))
    assert worker.remind(clock) == 1
    clock.advance(hours=2)
    assert worker.remind(clock) == 0
    due_soon, overdue = reminders_to("knight@example.com")
    assert due_soon.subject.startswith("Reminder: Due soon:")
    assert overdue.subject == "Reminder: Overdue: Ship the quarterly report"
    assert "The deadline has passed" in overdue.body
    assert url_of(c) in overdue.body


@pytest.mark.django_db(transaction=True)
def test_a_completed_commitment_is_not_reminded(clock, worker, assigner, assignee):
    c = active(assigner, assignee, T0 + dt.timedelta(hours=3))
    services.commitment_complete(actor=Actor.for_user(assignee), commitment_id=c.pk)
    clock.advance(hours=5)
    assert worker.remind(clock) == 0
    assert reminders_to("knight@example.com") == []


@pytest.mark.django_db(transaction=True)
def test_the_assigner_is_reminded_when_a_request_waited_two_days(clock, worker, assigner, assignee):
    c = pending(assigner, assignee, T0 + 10 * DAY)
    clock.advance(days=2, seconds=-60)
    assert worker.remind(clock) == 0
    clock.advance(seconds=120)
    assert worker.remind(clock) == 1
    (sent,) = reminders_to("lead@example.com")
    assert sent.subject == "Reminder: Still waiting for Knight: Ship the quarterly report"
    assert "Knight has not answered your request since Fri 1 Mar 2030, 09:00 (UTC)" in sent.body
    assert url_of(c) in sent.body
    clock.advance(days=1)
    assert worker.remind(clock) == 0
    assert reminders_to("knight@example.com") == []

    # Declined, changed and asked again: a new wait, its own reminder.
    services.commitment_decline(actor=Actor.for_user(assignee), commitment_id=c.pk)
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=c.pk, deadline=T0 + 20 * DAY
    )
    clock.advance(days=2, seconds=60)
    assert worker.remind(clock) == 1
    assert len(reminders_to("lead@example.com")) == 2


@pytest.mark.django_db(transaction=True)
def test_the_assigner_is_reminded_of_a_request_to_an_invited_address(clock, worker, assigner):
    # Found by mypy: the reminder read the assignee's name, and an invited
    # address has no account (no assignee) until it signs up.
    c = services.commitment_ask(
        actor=Actor.for_user(assigner),
        assignee_email="newcomer@example.com",
        description="Ship the quarterly report",
        deadline=T0 + 10 * DAY,
        send=True,
    )
    assert c.assignee_id is None
    # Made on the test's clock (the model's default reads the real one).
    Commitment.objects.filter(pk=c.pk).update(updated_at=clock.now)
    clock.advance(days=2, seconds=60)
    assert worker.remind(clock) == 1
    (sent,) = reminders_to("lead@example.com")
    assert sent.subject == (
        "Reminder: Still waiting for newcomer@example.com: Ship the quarterly report"
    )
    assert "newcomer@example.com has not answered your request since" in sent.body


@pytest.mark.django_db(transaction=True)
def test_reminders_falling_due_within_the_hour_come_in_one_digest(
    clock, worker, assigner, assignee
):
    first = active(assigner, assignee, T0 + dt.timedelta(hours=5), "First thing")
    second = active(assigner, assignee, T0 + dt.timedelta(hours=6), "Second thing")
    assert worker.remind(clock) == 2
    assert len(reminders_to("knight@example.com")) == 1  # one at once, one waits
    clock.advance(minutes=20)
    third = active(assigner, assignee, T0 + dt.timedelta(hours=7), "Third thing")
    assert worker.remind(clock) == 1
    worker.sweep(clock)
    assert len(reminders_to("knight@example.com")) == 1  # still within the hour

    clock.advance(minutes=41)  # an hour after the first message
    worker.sweep(clock)
    first_mail, digest = reminders_to("knight@example.com")
    assert "First thing" in first_mail.subject
    assert digest.subject == "2 reminders about your commitments"
    assert "Second thing" in digest.body and "Third thing" in digest.body
    assert "First thing" not in digest.body
    assert url_of(second) in digest.body and url_of(third) in digest.body
    assert url_of(first) not in digest.body
    deliveries = NudgeDelivery.objects.filter(reminder__isnull=False)
    assert set(deliveries.values_list("status", flat=True)) == {NudgeDeliveryStatus.DELIVERED}
    # The next hour starts a new count.
    clock.advance(minutes=30)
    worker.sweep(clock)
    assert len(reminders_to("knight@example.com")) == 2


@pytest.mark.django_db(transaction=True)
def test_someone_who_turned_reminders_off_gets_none(client, clock, worker, assigner, assignee):
    client.force_login(assignee)
    page = client.get("/settings/notifications/").content.decode()
    assert "Reminders" in page
    response = client.post("/settings/notifications/", {"kind": "email", "news_reminders": "off"})
    assert response.status_code == 302
    assert NudgeChannel.objects.get(user=assignee).news_reminders == "off"

    active(assigner, assignee, T0 + dt.timedelta(hours=3))
    pending(assigner, assignee, None)
    clock.advance(days=3)
    # The assigner still gets theirs; the assignee nothing.
    assert worker.remind(clock) == 1
    assert reminders_to("knight@example.com") == []
    assert len(reminders_to("lead@example.com")) == 1

    # Ticked again: on.
    client.post("/settings/notifications/", {"kind": "email", "news_reminders": "now"})
    assert NudgeChannel.objects.get(user=assignee).news_reminders == "now"


@pytest.mark.django_db(transaction=True)
def test_a_reminder_waiting_in_a_digest_is_not_sent_after_its_recipient_turned_them_off(
    clock, worker, assigner, assignee
):
    active(assigner, assignee, T0 + dt.timedelta(hours=5), "First thing")
    active(assigner, assignee, T0 + dt.timedelta(hours=6), "Second thing")
    assert worker.remind(clock) == 2
    notification_channel_set(user=assignee, kind=ChannelKind.EMAIL, news={"reminders": "off"})
    clock.advance(hours=1, minutes=1)
    worker.sweep(clock)
    assert len(reminders_to("knight@example.com")) == 1
    digest = NudgeDelivery.objects.get(is_digest=True)
    assert digest.status == NudgeDeliveryStatus.CANCELLED


@pytest.mark.django_db(transaction=True)
def test_the_reminder_says_when_it_is_due_in_the_recipients_time_zone_by_email_and_chat(
    clock, worker, assigner, assignee
):
    assignee.timezone = "Europe/Paris"
    assignee.save(update_fields=["timezone"])
    deadline = dt.datetime(2030, 3, 1, 17, 0, tzinfo=dt.UTC)
    c = active(assigner, assignee, deadline, "Ship the quarterly report")
    worker.remind(clock)
    (sent,) = reminders_to("knight@example.com")
    assert sent.body == (
        "A reminder of what you committed to Lead: Ship the quarterly report\n"
        "Due: Fri 1 Mar 2030, 18:00 (Europe/Paris).\n"
        "Mark it completed in Commitments once it is done.\n\n"
        f"{SITE}/commitments/{c.pk}\n"
    )

    with FakeService() as slack:
        notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
        clock.advance_to(deadline + dt.timedelta(minutes=1))
        worker.remind(clock)
        (request,) = slack.wait_for_requests(1)
    text = request.body["text"]
    assert text.startswith("*Reminder: Overdue: Ship the quarterly report*\n")
    assert "It was due: Fri 1 Mar 2030, 18:00 (Europe/Paris)." in text
    assert f"<{SITE}/commitments/{c.pk}|Open the commitment>" in text


@pytest.mark.django_db(transaction=True)
def test_a_scheduler_that_dies_before_committing_leaves_nothing_and_the_next_run_makes_it_once(
    clock, worker, monkeypatch, assigner, assignee
):
    active(assigner, assignee, T0 + dt.timedelta(hours=3))

    def crash(**kwargs):
        raise RuntimeError("the scheduler died")

    monkeypatch.setattr("notifications.dispatch.reminder_delivery_create", crash)
    with pytest.raises(RuntimeError):
        reminders_create_due(now=clock.now)
    assert not Reminder.objects.exists()
    monkeypatch.undo()
    worker_again = worker  # the same broker stand-in
    clock.advance(minutes=5)
    assert reminders_create_due(now=clock.now) == 1
    assert reminders_create_due(now=clock.now) == 0
    worker_again.run()
    assert NudgeDelivery.objects.filter(reminder__isnull=False).count() == 1


@pytest.mark.postgres
def test_two_schedulers_at_once_make_each_reminder_once(clock, worker, assigner, assignee):
    for n in range(5):
        active(assigner, assignee, T0 + dt.timedelta(hours=3 + n), f"Thing {n}")
    barrier = threading.Barrier(2)
    made: list[int] = []

    def scheduler() -> None:
        try:
            barrier.wait()
            made.append(reminders_create_due(now=clock.now))
        finally:
            connection.close()

    threads = [threading.Thread(target=scheduler) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(made) == 5
    assert Reminder.objects.count() == 5
    deliveries = NudgeDelivery.objects.filter(reminder__isnull=False)
    assert deliveries.count() == 5
    # One goes at once; the rest wait in one digest.
    assert deliveries.filter(status=NudgeDeliveryStatus.PENDING, is_digest=False).count() == 1
    assert deliveries.filter(is_digest=True).count() == 1
    assert deliveries.filter(status=NudgeDeliveryStatus.HELD).count() == 3


@pytest.mark.django_db(transaction=True)
def test_reminders_are_listed_with_the_nudges_on_the_page_and_in_the_admin(
    client, staff, clock, worker, assigner, assignee
):
    c = active(assigner, assignee, T0 + dt.timedelta(hours=3))
    worker.remind(clock)
    delivery = NudgeDelivery.objects.get(reminder__isnull=False)
    client.force_login(assignee)
    page = client.get("/settings/notifications/").content.decode()
    assert "Reminder: Due within a day: Ship the quarterly report" in page
    client.force_login(staff)
    listing = client.get("/admin/notifications/nudgedelivery/")
    assert listing.status_code == 200
    assert "Reminder: Due within a day" in listing.content.decode()
    change = client.get(f"/admin/notifications/nudgedelivery/{delivery.pk}/change/")
    assert change.status_code == 200
    assert str(c.pk) in change.content.decode()


@pytest.mark.django_db
def test_finding_what_is_due_takes_four_queries_however_many_there_are(
    clock, assigner, assignee, make_user, django_assert_num_queries
):
    from notifications.selectors import reminders_due

    for n in range(6):
        active(assigner, assignee, T0 + dt.timedelta(hours=n + 1), f"Soon {n}")
        active(assigner, assignee, T0 - dt.timedelta(hours=n + 1), f"Late {n}")
        pending(assigner, make_user(), None, f"Waiting {n}")
    clock.advance(days=2, minutes=1)
    # One query per kind (due soon, overdue, a request waiting, a proposal waiting).
    with django_assert_num_queries(4):
        due = reminders_due(now=clock.now - dt.timedelta(days=2, minutes=1))
    assert len(due) == 12
    with django_assert_num_queries(4):
        due = reminders_due(now=clock.now)
    kinds = [d.kind for d in due]
    assert kinds.count(ReminderKind.HANDSHAKE_WAITING) == 6
    assert kinds.count(ReminderKind.OVERDUE) == 12


@pytest.mark.django_db(transaction=True)
def test_a_digest_leaves_out_a_reminder_whose_commitment_was_completed_meanwhile(
    clock, worker, assigner, assignee
):
    active(assigner, assignee, T0 + dt.timedelta(hours=5), "First thing")
    active(assigner, assignee, T0 + dt.timedelta(hours=6), "Second thing")
    third = active(assigner, assignee, T0 + dt.timedelta(hours=7), "Third thing")
    assert worker.remind(clock) == 3
    services.commitment_complete(actor=Actor.for_user(assignee), commitment_id=third.pk)
    clock.advance(hours=1, minutes=1)
    worker.sweep(clock)
    first_mail, second_mail = reminders_to("knight@example.com")
    assert first_mail.subject == "Reminder: Due soon: First thing"
    assert second_mail.subject == "Reminder: Due soon: Second thing"
    assert "Third thing" not in second_mail.body
    assert (
        NudgeDelivery.objects.get(reminder__commitment=third).status
        == NudgeDeliveryStatus.CANCELLED
    )
