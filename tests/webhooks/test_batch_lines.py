"""A line of webhook sends to one endpoint (issue 29): sent in one batch in
the order the deliveries were made, each exactly once; a failed send stops
its endpoint's line in the batch (the rest wait for its retry, in order)
but not the other endpoints'; a batch whose worker dies in the middle is
taken up again when the leases run out, nothing sent twice; the person's
next in line goes as one batch task, not one task a send; and a batch
taken before an older one waiting for its turn leaves its rows behind it.
To real receivers on 127.0.0.1."""

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


def test_a_line_to_one_endpoint_goes_in_one_batch_in_order_each_once(endpoint, receiver, broker):
    rows = line(endpoint, 12)

    outcomes = sending.webhooks_send(delivery_ids=[str(row.pk) for row in reversed(rows)])

    assert outcomes == {"delivered": 12}
    assert ids_of(receiver.hits) == [str(row.pk) for row in rows]
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}
    assert WebhookAttempt.objects.count() == 12
    assert set(WebhookAttempt.objects.values_list("outcome", flat=True)) == {"delivered"}


def test_a_failed_send_stops_its_endpoint_s_line_not_the_others(assigner, broker, monkeypatch):
    clock = install_clock(monkeypatch)
    with Receiver() as bad, Receiver() as good:
        a = webhook_endpoint_create(user=assigner, external_system="a", url=bad.url)[0]
        b = webhook_endpoint_create(user=assigner, external_system="b", url=good.url)[0]
        rows_a = line(a, 4, clock.now - dt.timedelta(seconds=1))
        rows_b = line(b, 3, clock.now - dt.timedelta(seconds=1))
        bad.reply_with(Reply(200), Reply(500, "down"))

        outcomes = sending.webhooks_send(delivery_ids=[str(r.pk) for r in rows_a + rows_b])

        assert outcomes == {"delivered": 4, "failed": 1, "held back": 2}
        assert ids_of(bad.hits) == [str(rows_a[0].pk), str(rows_a[1].pk)]
        assert ids_of(good.hits) == [str(r.pk) for r in rows_b]
        failed = WebhookDelivery.objects.get(pk=rows_a[1].pk)
        assert failed.status == WebhookDeliveryStatus.PENDING and failed.attempts == 1
        for row in rows_a[2:]:
            row.refresh_from_db()
            # Not sent, not counted, due with the failed one's retry, unqueued.
            assert row.status == WebhookDeliveryStatus.PENDING
            assert row.attempts == 0 and row.enqueued_at is None
            assert row.next_attempt_at == failed.next_attempt_at > clock.now
            assert not row.attempt_log.exists()

        # Nothing of endpoint a goes before its retry is due...
        assert sending.webhooks_send(delivery_ids=[str(r.pk) for r in rows_a[2:]]) == {}
        # ...then the three go in order, the failed one first.
        clock.advance_to(failed.next_attempt_at)
        left = [str(r.pk) for r in rows_a[1:]]
        assert sending.webhooks_send(delivery_ids=list(reversed(left))) == {"delivered": 3}
        assert ids_of(bad.hits)[2:] == left
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}


def test_a_batch_interrupted_in_the_middle_is_resumed_once_the_leases_run_out(
    endpoint, receiver, broker, monkeypatch, settings
):
    clock = install_clock(monkeypatch)
    rows = line(endpoint, 6, clock.now - dt.timedelta(seconds=1))
    real_post = transport.outbound.post
    calls = {"n": 0}

    def dies_at_the_fourth(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:
            raise Died
        return real_post(*args, **kwargs)

    monkeypatch.setattr(transport.outbound, "post", dies_at_the_fourth)
    with pytest.raises(Died):
        sending.webhooks_send(delivery_ids=[str(r.pk) for r in rows])
    assert ids_of(receiver.hits) == [str(r.pk) for r in rows[:3]]
    monkeypatch.setattr(transport.outbound, "post", real_post)

    # Before the leases run out nobody takes them; after, the sweep does.
    assert sending.webhooks_send(delivery_ids=[str(r.pk) for r in rows]) == {}
    clock.advance(seconds=settings.DELIVERY_LEASE_SECONDS + 1)
    with transaction.atomic():
        due = dispatch.webhook_deliveries_take_due(
            now=clock.now, requeue_after=dt.timedelta(seconds=120), limit=20
        )
    assert set(due) == {r.pk for r in rows[3:]}
    assert sending.webhooks_send(delivery_ids=[str(pk) for pk in due]) == {"delivered": 3}

    assert ids_of(receiver.hits) == [str(r.pk) for r in rows]  # each once, in order
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}
    # The send the worker died in is marked interrupted; its retry delivered.
    attempts = rows[3].attempt_log.order_by("started_at", "pk")
    fourth = list(attempts.values_list("outcome", flat=True))
    assert fourth == [AttemptOutcome.INTERRUPTED, AttemptOutcome.DELIVERED]


def test_the_next_in_line_goes_as_one_batch_in_order(endpoint, receiver, broker, monkeypatch):
    # A task past its runs queues its line (within them it claims the line
    # itself: tests/webhooks/test_line_runs.py).
    monkeypatch.setattr(sending, "LINE_RUNS", 1)
    clock = install_clock(monkeypatch)
    first = line(endpoint, 2, clock.now - dt.timedelta(seconds=2))
    waiting = line(endpoint, 5, clock.now - dt.timedelta(seconds=1))
    # The five were left for their turn (their endpoint was busy).
    WebhookDelivery.objects.filter(pk__in=[r.pk for r in waiting]).update(
        next_attempt_at=clock.now + dt.timedelta(seconds=10), enqueued_at=None
    )

    assert sending.webhooks_send(delivery_ids=[str(r.pk) for r in first]) == {"delivered": 2}

    assert broker == [(tasks.deliver_webhooks.name, [str(r.pk) for r in waiting])]
    assert sending.webhooks_send(delivery_ids=broker[0][1]) == {"delivered": 5}
    assert ids_of(receiver.hits) == [str(r.pk) for r in first + waiting]


def test_a_batch_made_after_rows_waiting_for_their_turn_waits_behind_them(
    endpoint, receiver, broker, monkeypatch
):
    monkeypatch.setattr(sending, "LINE_RUNS", 1)  # the line queued, not claimed by the task
    clock = install_clock(monkeypatch)
    older = line(endpoint, 3, clock.now - dt.timedelta(seconds=2))
    newer = line(endpoint, 3, clock.now - dt.timedelta(seconds=1))

    # The newer batch's task is taken first: it leaves its rows for their turn.
    assert sending.webhooks_send(delivery_ids=[str(r.pk) for r in newer]) == {}
    assert sending.webhook_send(delivery_id=str(newer[0].pk)) is None
    assert not receiver.hits

    assert sending.webhooks_send(delivery_ids=[str(r.pk) for r in older]) == {"delivered": 3}
    # The older ones' end queues the newer ones, as one batch.
    assert broker[-1] == (tasks.deliver_webhooks.name, [str(r.pk) for r in newer])
    assert sending.webhooks_send(delivery_ids=broker[-1][1]) == {"delivered": 3}
    assert ids_of(receiver.hits) == [str(r.pk) for r in older + newer]
