"""Reminders through a real Celery worker with beat (the reminder task and
the sweep every second) on Redis and PostgreSQL, with a clock the test
controls: the worker's `timezone.now()` is shifted by the seconds in a file
the test writes (TEST_CLOCK_FILE, tests/harness/worker_settings.py). The assignee
gets the day-before reminder once, then the overdue one once."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from django.utils import timezone

from audit.services import Actor
from commitments import services
from notifications.models import Reminder, ReminderKind
from tests.harness.services import (
    celery_worker,
    purge_queue,
    read_mails,
    subprocess_env,
    wait_until,
)

pytestmark = pytest.mark.processes

DEADLINE = dt.datetime(2030, 3, 1, 17, 0, tzinfo=dt.UTC)


def set_clock(clock_file: Path, moment: dt.datetime) -> None:
    """Make the worker's now `moment` (and flowing from there)."""
    clock_file.write_text(str((moment - timezone.now()).total_seconds()))


def reminder_mails(mail_dir: Path) -> list:
    return [m for m in read_mails(mail_dir) if m["Subject"].startswith("Reminder: ")]


def runs_done(worker) -> int:
    return sum(
        1
        for line in worker.output().splitlines()
        if "notifications.tasks.remind[" in line and "succeeded" in line
    )


def let_runs_happen(worker, count: int = 3) -> None:
    start = runs_done(worker)
    wait_until(lambda: runs_done(worker) >= start + count, timeout=30, what="reminder runs")


@pytest.mark.postgres
@pytest.mark.redis
def test_a_real_worker_reminds_the_assignee_the_day_before_and_when_overdue_once_each(
    tmp_path, assigner, assignee
):
    purge_queue(os.environ["REDIS_URL"])
    clock_file = tmp_path / "clock"
    set_clock(clock_file, DEADLINE - dt.timedelta(days=2))
    env = subprocess_env(tmp_path, TEST_CLOCK_FILE=str(clock_file), TEST_REMINDER_INTERVAL="1")
    mail_dir = tmp_path / "mail"
    lead, knight = Actor.for_user(assigner), Actor.for_user(assignee)
    c = services.commitment_create_draft(
        actor=lead, assignee=assignee, description="Ship the quarterly report", deadline=DEADLINE
    )
    services.commitment_send_for_handshake(actor=lead, commitment_id=c.pk)
    services.commitment_accept(actor=knight, commitment_id=c.pk)

    with celery_worker(env, tmp_path / "worker.log") as worker:
        worker.wait_for_output("ready.")
        let_runs_happen(worker)  # two days ahead: nothing yet
        assert reminder_mails(mail_dir) == []

        set_clock(clock_file, DEADLINE - dt.timedelta(hours=20))
        (day_before,) = wait_until(
            lambda: reminder_mails(mail_dir), timeout=30, what="the day-before reminder"
        )
        let_runs_happen(worker)
        assert len(reminder_mails(mail_dir)) == 1  # not twice

        set_clock(clock_file, DEADLINE + dt.timedelta(minutes=1))
        wait_until(
            lambda: len(reminder_mails(mail_dir)) == 2, timeout=30, what="the overdue reminder"
        )
        let_runs_happen(worker)
        mails = reminder_mails(mail_dir)

    assert len(mails) == 2
    assert {m["To"] for m in mails} == {"knight@example.com"}
    assert day_before["Subject"] == "Reminder: Due soon: Ship the quarterly report"
    assert "Due: Fri 1 Mar 2030, 17:00 (UTC)." in day_before.get_payload()
    assert f"/commitments/{c.pk}\n" in day_before.get_payload()
    assert mails[1]["Subject"] == "Reminder: Overdue: Ship the quarterly report"
    kinds = sorted(Reminder.objects.filter(commitment_id=c.pk).values_list("kind", flat=True))
    assert kinds == [ReminderKind.DUE_SOON, ReminderKind.OVERDUE]
