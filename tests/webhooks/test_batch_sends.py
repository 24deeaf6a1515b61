"""A batch of webhook sends (`webhooks_send`, the `deliver_webhooks` task)
claimed together: each endpoint's deliveries in the order they were made,
the turns (one endpoint in flight at a time, WEBHOOK_USER_IN_FLIGHT per
person) kept, a few statements for the claim and one per delivered send.
To a real receiver on 127.0.0.1."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import OutboxEvent
from lib import jobs
from relay import outbox
from tests.harness.webhook_pages import delivery_row
from webhooks import sending
from webhooks.models import WebhookDelivery, WebhookDeliveryStatus
from webhooks.services import webhook_endpoint_create

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setattr(jobs, "enqueue", lambda *args, **kwargs: True)


def completed(assigner, assignee, system: str, n: int) -> None:
    commitment = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description=f"Request {n}",
        deadline=timezone.now() + dt.timedelta(days=3),
        external_system=system,
        external_id=f"{system}-{n}",
    )
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    services.commitment_complete(actor=Actor.for_user(assignee), commitment_id=commitment.pk)


def dispatch_everything() -> None:
    events = OutboxEvent.objects.filter(dispatched_at__isnull=True).order_by("pk")
    outbox.outbox_events_dispatch(events=[(event.pk, "") for event in events])


def test_each_endpoint_s_deliveries_go_in_the_order_of_the_moves(assigner, assignee, receiver):
    for system in ("jira", "linear"):
        webhook_endpoint_create(user=assigner, external_system=system, url=receiver.url)
    for n in range(4):
        completed(assigner, assignee, "jira" if n % 2 else "linear", n)
    dispatch_everything()  # one batch: its deliveries made at one `now`
    rows = list(WebhookDelivery.objects.order_by("event_id"))
    assert len(rows) == 8  # activated and completed, each

    # The batch task gets them in any order (the sweep's is by due time).
    outcomes = sending.webhooks_send(delivery_ids=[str(row.pk) for row in reversed(rows)])

    assert outcomes == {"delivered": 8}
    sent = [hit.headers["X-Service-Delivery"] for hit in receiver.hits]
    for system in ("jira", "linear"):
        made = [str(row.pk) for row in rows if row.endpoint.external_system == system]
        assert [pk for pk in sent if pk in made] == made


def test_a_batch_waits_for_an_endpoint_another_worker_is_sending_to(
    assigner, assignee, receiver, settings, monkeypatch
):
    monkeypatch.setattr(sending, "LINE_RUNS", 1)  # c's turn comes after the task (no next run)
    settings.WEBHOOK_USER_IN_FLIGHT = 2
    endpoints = [
        webhook_endpoint_create(user=assigner, external_system=s, url=receiver.url)[0]
        for s in ("a", "b", "c")
    ]
    flying = delivery_row(endpoints[0], None)
    WebhookDelivery.objects.filter(pk=flying.pk).update(
        status=WebhookDeliveryStatus.SENDING,
        attempts=1,
        claimed_until=timezone.now() + dt.timedelta(minutes=2),
    )
    batch = [delivery_row(endpoint, None) for endpoint in endpoints for _ in range(2)]

    before = timezone.now()
    outcomes = sending.webhooks_send(delivery_ids=[str(row.pk) for row in batch])

    # Endpoint a is busy; b is taken (two in flight with a's), so c waits too.
    assert outcomes == {"delivered": 2}
    for row in batch:
        row.refresh_from_db()
        if row.endpoint_id == endpoints[1].pk:
            assert row.status == WebhookDeliveryStatus.DELIVERED
        else:
            assert row.status == WebhookDeliveryStatus.PENDING
            assert row.attempts == 0 and row.next_attempt_at > before  # WEBHOOK_TIMEOUT on


def _statements(ids) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert sending.webhooks_send(delivery_ids=[str(pk) for pk in ids]) == {
            "delivered": len(ids)
        }
    return len(queries)


def test_a_batch_costs_a_few_statements_and_one_per_delivered_send(assigner, endpoint):
    small = [delivery_row(endpoint, None).pk for _ in range(3)]
    claim_and_last = _statements(small) - len(small)
    large = [delivery_row(endpoint, None).pk for _ in range(12)]
    assert _statements(large) - len(large) == claim_and_last
    # BEGIN, the rows, the turn lock, in flight, the claim (with the first
    # attempt's time), the load, the open attempts closed, COMMIT, the first
    # attempt; then one look for the person's next in line after the last
    # send (was 14: the first attempt's time apart, the next in line a
    # transaction of four).
    assert claim_and_last <= 10
