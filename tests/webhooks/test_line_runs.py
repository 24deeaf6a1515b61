"""A batch task that ends with its person's line waiting claims the line's
next run itself (`webhooks.sending._line`, issue 29), instead of queueing
a task for it: each endpoint's deliveries still go in the order they were
made, each once; a failed send still stops its endpoint's line in its run
and not the others'; the runs it claimed are leases the sweep respects, so
a worker killed in one loses nothing and sends nothing twice; and a task
goes on for at most LINE_RUNS runs, none started after LINE_SECONDS, then
queues the line as before. To real receivers on 127.0.0.1."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import transaction

from tests.harness.services import Reply
from tests.harness.webhooks import Died, Receiver, ids_of, install_clock, line
from webhooks import dispatch, sending, tasks, transport
from webhooks.models import AttemptOutcome, WebhookAttempt, WebhookDelivery, WebhookDeliveryStatus
from webhooks.services import webhook_endpoint_create

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_a_task_sends_its_line_s_next_runs_itself_in_order_each_once(
    endpoint, receiver, broker, monkeypatch
):
    clock = install_clock(monkeypatch)
    rows = line(endpoint, 45, clock.now - dt.timedelta(seconds=1))

    outcomes = sending.webhooks_send(delivery_ids=[str(r.pk) for r in rows[:20]])

    assert outcomes == {"delivered": 45}  # three runs: 20, 20, 5
    assert broker == []  # no task queued for the line
    assert ids_of(receiver.hits) == [str(r.pk) for r in rows]
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}
    assert WebhookAttempt.objects.count() == 45
    assert set(WebhookAttempt.objects.values_list("outcome", flat=True)) == {"delivered"}


def test_a_single_send_goes_on_with_its_line_too(endpoint, receiver, broker, monkeypatch):
    clock = install_clock(monkeypatch)
    rows = line(endpoint, 4, clock.now - dt.timedelta(seconds=1))
    # The three after the first were left for their turn.
    WebhookDelivery.objects.filter(pk__in=[r.pk for r in rows[1:]]).update(
        next_attempt_at=clock.now + dt.timedelta(seconds=10), enqueued_at=None
    )

    assert sending.webhook_send(delivery_id=str(rows[0].pk)) == AttemptOutcome.DELIVERED

    assert broker == []
    assert ids_of(receiver.hits) == [str(r.pk) for r in rows]


def test_a_task_goes_on_for_at_most_line_runs_then_queues_the_line(
    endpoint, receiver, broker, monkeypatch
):
    monkeypatch.setattr(sending, "LINE_RUNS", 2)
    clock = install_clock(monkeypatch)
    rows = line(endpoint, 50, clock.now - dt.timedelta(seconds=1))

    assert sending.webhooks_send(delivery_ids=[str(r.pk) for r in rows[:20]]) == {"delivered": 40}

    assert ids_of(receiver.hits) == [str(r.pk) for r in rows[:40]]
    assert broker == [(tasks.deliver_webhooks.name, [str(r.pk) for r in rows[40:]])]
    assert sending.webhooks_send(delivery_ids=broker[0][1]) == {"delivered": 10}
    assert ids_of(receiver.hits) == [str(r.pk) for r in rows]


def test_a_task_starts_no_run_after_line_seconds(endpoint, receiver, broker, monkeypatch):
    monkeypatch.setattr(sending, "LINE_SECONDS", 0.0)
    clock = install_clock(monkeypatch)
    rows = line(endpoint, 30, clock.now - dt.timedelta(seconds=1))

    assert sending.webhooks_send(delivery_ids=[str(r.pk) for r in rows[:20]]) == {"delivered": 20}

    assert broker == [(tasks.deliver_webhooks.name, [str(r.pk) for r in rows[20:]])]


def test_a_bad_delivery_in_a_run_the_task_claimed_stops_its_endpoint_the_rest_go(
    assigner, broker, monkeypatch, settings
):
    settings.WEBHOOK_USER_IN_FLIGHT = 2
    clock = install_clock(monkeypatch)
    with Receiver() as bad, Receiver() as good:
        a = webhook_endpoint_create(user=assigner, external_system="a", url=bad.url)[0]
        b = webhook_endpoint_create(user=assigner, external_system="b", url=good.url)[0]
        start = clock.now - dt.timedelta(seconds=1)
        rows_a, rows_b = [], []
        for i in range(20):  # made in turns: a0, b0, a1, b1, ... a5, b5, b6, ...
            if i < 6:
                rows_a += line(a, 1, start + dt.timedelta(milliseconds=2 * i))
            rows_b += line(b, 1, start + dt.timedelta(milliseconds=2 * i + 1))
        bad.reply_with(Reply(200), Reply(200), Reply(200), Reply(500, "down"))

        # The first run is a0 and b0; the task claims the rest itself.
        outcomes = sending.webhooks_send(delivery_ids=[str(rows_a[0].pk), str(rows_b[0].pk)])

        assert outcomes == {"delivered": 23, "failed": 1, "held back": 2}
        assert broker == []
        assert ids_of(bad.hits) == [str(r.pk) for r in rows_a[:4]]
        assert ids_of(good.hits) == [str(r.pk) for r in rows_b]
        failed = WebhookDelivery.objects.get(pk=rows_a[3].pk)
        assert failed.status == WebhookDeliveryStatus.PENDING and failed.attempts == 1
        for row in rows_a[4:]:
            row.refresh_from_db()
            assert row.status == WebhookDeliveryStatus.PENDING and row.attempts == 0
            assert row.next_attempt_at == failed.next_attempt_at > clock.now
            assert not row.attempt_log.exists()

        clock.advance_to(failed.next_attempt_at)
        left = [str(r.pk) for r in rows_a[3:]]
        assert sending.webhooks_send(delivery_ids=left) == {"delivered": 3}
        assert ids_of(bad.hits)[4:] == left


def test_a_worker_killed_in_a_run_it_claimed_loses_nothing_and_sends_nothing_twice(
    endpoint, receiver, broker, monkeypatch, settings
):
    clock = install_clock(monkeypatch)
    rows = line(endpoint, 30, clock.now - dt.timedelta(seconds=1))
    real_post = transport.outbound.post
    calls = {"n": 0}

    def dies_at_the_twelfth(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 12:
            raise Died
        return real_post(*args, **kwargs)

    monkeypatch.setattr(transport.outbound, "post", dies_at_the_twelfth)
    with pytest.raises(Died):  # in the second run: rows 5 to 24, claimed by the task
        sending.webhooks_send(delivery_ids=[str(r.pk) for r in rows[:5]])
    assert ids_of(receiver.hits) == [str(r.pk) for r in rows[:11]]
    monkeypatch.setattr(transport.outbound, "post", real_post)

    # The run the task claimed holds leases: nobody takes it, nor what waits
    # behind it, before they run out; the sweep takes none of it.
    assert sending.webhooks_send(delivery_ids=[str(r.pk) for r in rows]) == {}
    with transaction.atomic():
        assert not dispatch.webhook_deliveries_take_due(
            now=clock.now, requeue_after=dt.timedelta(seconds=120), limit=50
        )
    clock.advance(seconds=settings.DELIVERY_LEASE_SECONDS + 1)
    with transaction.atomic():
        due = dispatch.webhook_deliveries_take_due(
            now=clock.now, requeue_after=dt.timedelta(seconds=120), limit=50
        )
    assert set(due) == {r.pk for r in rows[11:]}
    assert sending.webhooks_send(delivery_ids=[str(pk) for pk in due]) == {"delivered": 19}

    assert ids_of(receiver.hits) == [str(r.pk) for r in rows]  # each once, in order
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}
    died_in = list(
        rows[11].attempt_log.order_by("started_at", "pk").values_list("outcome", flat=True)
    )
    assert died_in == [AttemptOutcome.INTERRUPTED, AttemptOutcome.DELIVERED]
