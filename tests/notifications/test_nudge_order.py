"""The nudges to one person about one commitment go out in the order of its
moves (issue 24): a request and then its renegotiation reach the assignee in
that order, however the workers race; nudges about other commitments do not
wait for them. Decided when a delivery is claimed (notifications.turns),
so these tests call dispatch and send directly, in the orders racing workers
can take; tests/relay/test_worker.py races two real workers."""

from __future__ import annotations

import datetime as dt
import smtplib

import pytest
from django.core import mail
from django.core.mail.backends.base import BaseEmailBackend
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import OutboxEvent
from lib import jobs
from notifications.models import AttemptOutcome, NudgeDelivery, NudgeDeliveryStatus
from notifications.sending import nudge_send
from relay import outbox
from tests.harness.commitments import ask, renegotiate

pytestmark = pytest.mark.django_db


class DownBackend(BaseEmailBackend):
    def send_messages(self, messages):
        raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed")


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []


@pytest.fixture
def queued(monkeypatch, django_capture_on_commit_callbacks):
    """The broker: the ids of the nudges queued, as their transactions commit."""
    ids: list[str] = []

    def enqueue(task, *args, **kwargs):
        if task.name == "notifications.tasks.deliver_nudge":
            ids.append(args[0])
        return True

    monkeypatch.setattr(jobs, "enqueue", enqueue)
    return ids


def events_of(commitment) -> list[OutboxEvent]:
    return list(OutboxEvent.objects.filter(commitment=commitment).order_by("pk"))


def dispatched(event: OutboxEvent, capture) -> NudgeDelivery | None:
    """Dispatch `event` as a worker would (its after-commit queueing run)."""
    with capture(execute=True):
        outbox.outbox_event_dispatch(event_id=event.pk)
    return NudgeDelivery.objects.filter(event=event).first()


def sent(delivery: NudgeDelivery, capture) -> str | None:
    with capture(execute=True):
        return nudge_send(delivery_id=delivery.pk)


def subjects() -> list[str]:
    return [str(message.subject) for message in mail.outbox]


@pytest.fixture
def request_and_change(assigner, assignee):
    """A request, then its renegotiation: two nudges to the assignee."""
    commitment = ask(assigner, assignee, "Ship the report")
    renegotiate(assigner, commitment, "Ship the report and the slides")
    return events_of(commitment)


def test_a_renegotiation_claimed_before_its_request_waits_for_it(
    request_and_change, queued, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    first, second = (dispatched(event, capture) for event in request_and_change)
    queued.clear()

    # The worker holding the renegotiation's task gets there first: it waits.
    assert sent(second, capture) is None
    second.refresh_from_db()
    assert (second.status, second.attempts) == (NudgeDeliveryStatus.PENDING, 0)
    assert mail.outbox == []

    # The request goes, and its end queues the renegotiation.
    assert sent(first, capture) == AttemptOutcome.DELIVERED
    assert queued == [str(second.pk)]
    assert sent(second, capture) == AttemptOutcome.DELIVERED

    # (Each says the terms as they are when it is sent.)
    assert subjects() == [
        "Lead asks you: Ship the report and the slides",
        "Lead changed a request: Ship the report and the slides",
    ]


def test_a_nudge_waits_for_an_earlier_move_that_is_not_dispatched_yet(
    request_and_change, queued, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    request, change = request_and_change
    # The renegotiation's event is dispatched first (another worker, or the
    # request's dispatch failed once and waits for the sweep).
    second = dispatched(change, capture)
    assert sent(second, capture) is None
    queued.clear()

    first = dispatched(request, capture)
    assert queued == [str(first.pk)]  # the renegotiation still waits behind it
    assert sent(first, capture) == AttemptOutcome.DELIVERED
    assert queued == [str(first.pk), str(second.pk)]
    assert sent(second, capture) == AttemptOutcome.DELIVERED

    assert [s.split(":")[0] for s in subjects()] == ["Lead asks you", "Lead changed a request"]


def test_a_nudge_waits_while_the_one_before_it_waits_for_a_retry(
    request_and_change, queued, settings, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    first, second = (dispatched(event, capture) for event in request_and_change)
    settings.EMAIL_BACKEND = f"{__name__}.DownBackend"
    assert sent(first, capture) == AttemptOutcome.TRANSIENT
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"

    # The mail server is back, but the request's retry is not due yet.
    assert sent(second, capture) is None
    assert mail.outbox == []

    NudgeDelivery.objects.filter(pk=first.pk).update(next_attempt_at=timezone.now())
    queued.clear()
    assert sent(first, capture) == AttemptOutcome.DELIVERED
    assert queued == [str(second.pk)]
    assert sent(second, capture) == AttemptOutcome.DELIVERED
    assert [s.split(":")[0] for s in subjects()] == ["Lead asks you", "Lead changed a request"]


def test_a_nudge_that_failed_for_good_holds_up_nothing_after_it(
    request_and_change, queued, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    first, second = (dispatched(event, capture) for event in request_and_change)
    NudgeDelivery.objects.filter(pk=first.pk).update(status=NudgeDeliveryStatus.FAILED)

    assert sent(second, capture) == AttemptOutcome.DELIVERED


def test_an_event_whose_dispatch_failed_holds_up_nobody(
    request_and_change, queued, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    request, change = request_and_change
    # Its dispatch raised once; it waits for the sweep's back-off.
    OutboxEvent.objects.filter(pk=request.pk).update(dispatch_attempts=1)

    assert sent(dispatched(change, capture), capture) == AttemptOutcome.DELIVERED


def test_a_move_that_nudges_nobody_lets_the_nudge_waiting_for_it_go(
    assigner, assignee, queued, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    commitment = ask(assigner, assignee, "Ship the report")
    dispatched(events_of(commitment)[0], capture)
    NudgeDelivery.objects.filter(event__commitment=commitment).update(
        status=NudgeDeliveryStatus.DELIVERED
    )
    # The assignee declines (that tells the assigner, not them), and the
    # assigner renegotiates right after (that tells them).
    services.commitment_decline(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    renegotiate(assigner, commitment, "Ship the report by Friday")
    declined, renegotiated = events_of(commitment)[-2:]
    waiting = dispatched(renegotiated, capture)
    assert sent(waiting, capture) is None
    queued.clear()

    dispatched(declined, capture)

    assert str(waiting.pk) in queued
    assert sent(waiting, capture) == AttemptOutcome.DELIVERED


def test_nudges_about_different_commitments_do_not_wait_for_each_other(
    assigner, assignee, make_user, queued, settings, django_capture_on_commit_callbacks
):
    """One person asked many things at once (an integration's burst) gets
    them as fast as the workers send, not one at a time."""
    capture = django_capture_on_commit_callbacks
    mine = ask(assigner, assignee, "Ship the report")
    first = dispatched(events_of(mine)[0], capture)
    settings.EMAIL_BACKEND = f"{__name__}.DownBackend"
    assert sent(first, capture) == AttemptOutcome.TRANSIENT  # waits for its retry
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    # Asked something else before the first request's event was even
    # dispatched by another worker, and something by someone else.
    undispatched = ask(assigner, assignee, "Book the room")
    other = ask(make_user("other@example.com", display_name="Other"), assignee, "Review it")

    assert sent(dispatched(events_of(other)[0], capture), capture) == AttemptOutcome.DELIVERED
    assert sent(dispatched(events_of(undispatched)[0], capture), capture) == (
        AttemptOutcome.DELIVERED
    )
    assert [s.split(":")[0] for s in subjects()] == ["Other asks you", "Lead asks you"]


def test_a_digest_waiting_for_its_hour_holds_up_no_other_senders_nudge(
    assigner, assignee, make_user, settings, queued, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    settings.NUDGE_CAP = 1
    for n in range(2):
        commitment = ask(assigner, assignee, f"Request number {n}")
        dispatched(events_of(commitment)[0], capture)
    digest = NudgeDelivery.objects.get(is_digest=True)
    assert digest.next_attempt_at > timezone.now() + dt.timedelta(minutes=30)
    NudgeDelivery.objects.filter(is_digest=False).update(status=NudgeDeliveryStatus.DELIVERED)

    other = ask(make_user("other@example.com", display_name="Other"), assignee, "Review it")

    assert sent(dispatched(events_of(other)[0], capture), capture) == AttemptOutcome.DELIVERED


def test_reminders_take_no_turn(assigner, assignee, queued, django_capture_on_commit_callbacks):
    from notifications.dispatch import reminder_delivery_create
    from notifications.models import Reminder, ReminderKind

    capture = django_capture_on_commit_callbacks
    commitment = ask(assigner, assignee, "Ship the report")
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    request_nudge = dispatched(events_of(commitment)[0], capture)  # not sent yet
    reminder = Reminder.objects.create(
        commitment=commitment,
        kind=ReminderKind.DUE_SOON,
        moment=timezone.now(),
        recipient=assignee,
    )
    with capture(execute=True):
        delivery_id = reminder_delivery_create(reminder=reminder, now=timezone.now())

    request_nudge.refresh_from_db()
    assert request_nudge.status == NudgeDeliveryStatus.PENDING  # earlier, and not sent yet
    assert nudge_send(delivery_id=delivery_id) is not None  # claimed, not left waiting
