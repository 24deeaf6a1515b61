"""A webhook line writes each delivered send's outcome on a thread of its
own, with a connection of its own, while it posts the next row
(`webhooks.sending._recorder`, issue 29): the record and the next POST
overlap, every row is still recorded once with its attempt, in order; and a
record that fails loses nothing: that send and the one posted beside it
are left to their leases (their endpoint's line stops there, the rest wait
in order), and once the leases run out both go again, with the same ids.
To a real receiver on 127.0.0.1, on PostgreSQL."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.db import transaction

from lib import deliveries
from tests.harness.webhooks import ids_of, install_clock, line
from webhooks import dispatch, sending
from webhooks.models import AttemptOutcome, WebhookAttempt, WebhookDelivery, WebhookDeliveryStatus

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_each_record_is_written_beside_the_next_post_on_a_thread_of_its_own(
    endpoint, receiver, broker, monkeypatch
):
    rows = line(endpoint, 6)
    real = deliveries.record_delivered_ended
    threads = []  # the thread each record was written on

    def noted(claim, **kwargs):
        threads.append(threading.current_thread().name)
        return real(claim, **kwargs)

    monkeypatch.setattr(deliveries, "record_delivered_ended", noted)

    assert sending.webhooks_send(delivery_ids=[str(r.pk) for r in rows]) == {"delivered": 6}

    assert ids_of(receiver.hits) == [str(r.pk) for r in rows]
    assert len(threads) == 6
    assert all(name.startswith("webhook-record") for name in threads)
    for row in rows:
        row.refresh_from_db()
        assert row.status == WebhookDeliveryStatus.DELIVERED
        assert list(row.attempt_log.values_list("outcome", flat=True)) == ["delivered"]


def test_inside_a_transaction_each_record_is_written_before_the_next_post(
    endpoint, receiver, broker, monkeypatch
):
    rows = line(endpoint, 3)
    real = deliveries.record_delivered_ended
    seen = []

    def noted(claim, **kwargs):
        seen.append((threading.current_thread(), len(receiver.hits)))
        return real(claim, **kwargs)

    monkeypatch.setattr(deliveries, "record_delivered_ended", noted)

    with transaction.atomic():
        assert sending.webhooks_send(delivery_ids=[str(r.pk) for r in rows]) == {"delivered": 3}

    assert seen == [(threading.current_thread(), n) for n in (1, 2, 3)]


def test_a_record_that_fails_leaves_that_send_and_the_one_beside_it_to_their_leases(
    endpoint, receiver, broker, monkeypatch, settings
):
    clock = install_clock(monkeypatch)
    rows = line(endpoint, 6, clock.now - dt.timedelta(seconds=1))
    real = deliveries.record_delivered_ended

    def fails_for_the_third(claim, **kwargs):
        if claim.row.pk == rows[2].pk:
            raise RuntimeError("the database went away")
        return real(claim, **kwargs)

    monkeypatch.setattr(deliveries, "record_delivered_ended", fails_for_the_third)

    outcomes = sending.webhooks_send(delivery_ids=[str(r.pk) for r in rows])

    # The fourth was posted while the third's record failed: neither is
    # recorded; the line stops there and the last two are not sent.
    assert outcomes == {"delivered": 2, "error": 2, "held back": 2}
    assert ids_of(receiver.hits) == [str(r.pk) for r in rows[:4]]
    statuses = {r.pk: r.status for r in WebhookDelivery.objects.filter(pk__in=[r.pk for r in rows])}
    assert [statuses[r.pk] for r in rows] == [
        WebhookDeliveryStatus.DELIVERED,
        WebhookDeliveryStatus.DELIVERED,
        WebhookDeliveryStatus.SENDING,
        WebhookDeliveryStatus.SENDING,
        WebhookDeliveryStatus.PENDING,
        WebhookDeliveryStatus.PENDING,
    ]
    monkeypatch.setattr(deliveries, "record_delivered_ended", real)

    # Nothing goes before the leases run out; then all four go, in order.
    assert sending.webhooks_send(delivery_ids=[str(r.pk) for r in rows[2:]]) == {}
    clock.advance(seconds=settings.DELIVERY_LEASE_SECONDS + 1)
    with transaction.atomic():
        due = dispatch.webhook_deliveries_take_due(
            now=clock.now, requeue_after=dt.timedelta(seconds=120), limit=20
        )
    assert set(due) == {r.pk for r in rows[2:]}
    assert sending.webhooks_send(delivery_ids=[str(pk) for pk in due]) == {"delivered": 4}

    ids = [str(r.pk) for r in rows]
    assert ids_of(receiver.hits) == ids[:4] + ids[2:]  # the two unrecorded went again
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}
    assert WebhookAttempt.objects.filter(outcome=AttemptOutcome.DELIVERED).count() == 6
