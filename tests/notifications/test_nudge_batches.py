"""A batch of nudge sends (`nudges_send`, the `deliver_nudges` task), in
process (issue 29): whose turn it is is read once for the batch (two
queries, not two a nudge), a delivered nudge is recorded in one statement,
and the people's next nudges in line are queued once the batch is over, in
the order of the moves. Tested with real workers in tests/relay."""

from __future__ import annotations

import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext

from commitments.models import OutboxEvent
from lib import jobs
from notifications.models import AttemptOutcome, NudgeAttempt, NudgeDelivery, NudgeDeliveryStatus
from notifications.sending import nudges_send
from relay import outbox
from tests.harness.commitments import ask, renegotiate

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []


@pytest.fixture
def broker(monkeypatch, django_capture_on_commit_callbacks) -> list:
    """The broker: (task name, argument) of what is queued."""
    sent: list = []

    def enqueue(task, *args, **kwargs):
        sent.append((task.name, args[0]))
        return True

    monkeypatch.setattr(jobs, "enqueue", enqueue)
    return sent


def dispatch_all(capture) -> list[str]:
    """Dispatch every event as one batch; the ids of their nudges, in the
    order of the moves."""
    events = OutboxEvent.objects.filter(dispatched_at__isnull=True).order_by("pk")
    with capture(execute=True):
        outbox.outbox_events_dispatch(events=[(event.pk, "") for event in events])
    return [
        str(pk)
        for pk in NudgeDelivery.objects.filter(status=NudgeDeliveryStatus.PENDING)
        .order_by("event_id")
        .values_list("pk", flat=True)
    ]


def statements(ids: list[str], capture) -> int:
    with capture(execute=True), CaptureQueriesContext(connection) as queries:
        assert nudges_send(delivery_ids=ids) == {"delivered": len(ids)}
    return len(queries)


@pytest.mark.postgres  # one statement there (lib.db.write_together); two on SQLite
def test_a_batch_costs_a_few_statements_and_one_per_delivered_nudge(
    assigner, make_user, broker, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    people = [make_user(f"person{n}@example.com") for n in range(15)]
    for person in people[:3]:
        ask(assigner, person)
    small = dispatch_all(capture)
    for person in people[3:]:
        ask(assigner, person)
    large = [pk for pk in dispatch_all(capture) if pk not in small]
    assert (len(small), len(large)) == (3, 12)

    cost_small, cost_large = statements(small, capture), statements(large, capture)

    # One statement a delivered nudge (was BEGIN, four statements, COMMIT
    # and two to check its turn): the rest is the batch's.
    assert cost_large - cost_small == len(large) - len(small)
    assert cost_small - len(small) <= 12
    assert len(mail.outbox) == 15
    assert set(NudgeAttempt.objects.values_list("outcome", flat=True)) == {AttemptOutcome.DELIVERED}
    assert NudgeAttempt.objects.filter(duration_ms__isnull=True).count() == 0


def test_a_later_move_in_the_same_batch_waits_and_goes_after_it(
    assigner, assignee, make_user, broker, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    commitment = ask(assigner, assignee, "Ship the report")
    renegotiate(assigner, commitment, "Ship the report and the slides")
    other = ask(assigner, make_user("other@example.com"), "Other thing")
    ids = dispatch_all(capture)
    assert len(ids) == 3
    request, change = (
        str(pk)
        for pk in NudgeDelivery.objects.filter(event__commitment=commitment)
        .order_by("event_id")
        .values_list("pk", flat=True)
    )
    broker.clear()

    # Given in any order, the renegotiation's waits for its request's.
    with capture(execute=True):
        assert nudges_send(delivery_ids=list(reversed(ids))) == {"delivered": 2}
    waiting = NudgeDelivery.objects.get(pk=change)
    assert (waiting.status, waiting.attempts) == (NudgeDeliveryStatus.PENDING, 0)
    # The batch's end queued it, once its request was delivered.
    assert broker == [("notifications.tasks.deliver_nudge", change)]
    with capture(execute=True):
        assert nudges_send(delivery_ids=[change]) == {"delivered": 1}

    to_assignee = [str(m.subject) for m in mail.outbox if m.to == [assignee.email]]
    assert [s.split(":")[0] for s in to_assignee] == ["Lead asks you", "Lead changed a request"]
    assert NudgeDelivery.objects.get(event__commitment=other).status == "delivered"
    assert request != change
