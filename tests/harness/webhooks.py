"""Helpers for the webhook tests: a loopback receiver that keeps the raw
bytes and headers of every POST, a clock the test moves, and a commitment
with an external mapping, dispatching the outbox as a worker would, and the
webhook worker process. Plain functions and classes."""

from __future__ import annotations

import datetime as dt
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import redis
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import OutboxEvent
from relay import outbox
from tests.harness.services import FakeService, Process, Reply
from tests.harness.webhook_pages import delivery_row
from webhooks.models import WebhookDelivery


@dataclass
class Hit:
    path: str
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str:
        lowered = {k.lower(): v for k, v in self.headers.items()}
        return lowered[name.lower()]


class Receiver(FakeService):
    """An integrator's endpoint on 127.0.0.1: answers POSTs with queued
    replies (then `default`), recording the raw bytes and headers (`hits`)."""

    path = "/hooks/commitments"
    hold_timeout = 60

    def __init__(self, default: Reply | None = None) -> None:
        super().__init__(default or Reply(200, "thanks"))

    def record(self, path: str, headers: dict[str, str], raw: bytes) -> Hit:
        return Hit(path, headers, raw)

    @property
    def hits(self) -> list[Hit]:
        return cast(list[Hit], self.requests)  # record() makes each a Hit

    def wait_for_hits(self, count: int, timeout: float = 20) -> list[Hit]:
        return cast(list[Hit], self.wait_for_requests(count, timeout=timeout))


class Clock:
    """`django.utils.timezone.now`, as the test sets it."""

    def __init__(self, start: dt.datetime) -> None:
        self.now = start

    def __call__(self) -> dt.datetime:
        return self.now

    def advance_to(self, moment: dt.datetime) -> None:
        assert moment >= self.now
        self.now = moment

    def advance(self, **delta: float) -> None:
        self.now += dt.timedelta(**delta)


def install_clock(monkeypatch, start: dt.datetime | None = None) -> Clock:
    clock = Clock(start or dt.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC))
    monkeypatch.setattr(timezone, "now", clock)
    return clock


def mapped_pending(assigner, assignee, *, system: str = "jira", external_id: str = "OPS-42"):
    """A commitment from the inbox path: Pending_Handshake, with a mapping."""
    return services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Ship the quarterly report",
        deadline=dt.datetime(2030, 3, 1, 17, 0, tzinfo=dt.UTC),
        external_system=system,
        external_id=external_id,
    )


def mapped_active(assigner, assignee, **kwargs):
    commitment = mapped_pending(assigner, assignee, **kwargs)
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    commitment.refresh_from_db()
    return commitment


def dispatch_all() -> list:
    """Dispatch every outbox event not dispatched yet, as a worker would;
    returns the ids of what was created."""
    created = []
    for event_id in OutboxEvent.objects.filter(dispatched_at__isnull=True).values_list(
        "id", flat=True
    ):
        created += outbox.outbox_event_dispatch(event_id=event_id)
    return created


def purge_queues(redis_url: str) -> None:
    """Empty the nudges' and the webhooks' queues, so messages other tests
    left (ids of rows long gone) do not hold this one up."""
    client = redis.Redis.from_url(redis_url, socket_timeout=5)
    for pattern in ("celery*", "webhooks*", "unacked*"):
        keys = list(client.scan_iter(pattern))
        if keys:
            client.delete(*keys)
    client.close()


def webhook_worker(env: dict[str, str], log: Path, concurrency: int = 1) -> Process:
    """`celery -A config worker -Q webhooks`, as compose.yaml's webhook-worker."""
    return Process(
        [
            *(sys.executable, "-m", "celery", "-A", "config", "worker"),
            "--queues=webhooks",
            "--hostname=webhooks@%h",
            f"--concurrency={concurrency}",
            "--loglevel=INFO",
            *("--without-gossip", "--without-mingle", "--without-heartbeat"),
        ],
        env,
        log,
    )


# --- lines of deliveries to one endpoint (the batch and line tests) ---------------------


def line(endpoint, n: int, start: dt.datetime | None = None) -> list[WebhookDelivery]:
    """`n` deliveries to `endpoint`, made one millisecond apart."""
    start = start or timezone.now()
    rows = []
    for i in range(n):
        row = delivery_row(endpoint, None)
        WebhookDelivery.objects.filter(pk=row.pk).update(
            created_at=start + dt.timedelta(milliseconds=i)
        )
        rows.append(row)
    return rows


def ids_of(hits) -> list[str]:
    """The delivery ids a receiver got, in order."""
    return [hit.headers["X-Service-Delivery"] for hit in hits]


class Died(BaseException):
    """A worker killed in the middle of its batch (not an Exception: nothing
    in the batch's loop catches it)."""
