"""What the worker spends per outbox event and per send: the worker's side,
measured in one process, with no broker round trip between the steps.

    python -m benchmarks.sendcost                      # CPU, wall and queries per item
    python -m benchmarks.sendcost --cprofile nudge     # and where a nudge send's time goes

`--count` inbox calls and as many completing syncs (through Django's request
handler) make twice as many outbox events: each request calls for a nudge
(e-mail, to a local SMTP server: tests/harness/smtp.py), each
completion for a webhook (to the local receiver, benchmarks/receiver.py,
which answers 200 at once) and a nudge to the assigner. Then, as a worker runs
them, each phase on its own: the events dispatched, the nudges sent, the
webhooks sent, with the worker's entry points (the batch ones, in the
chunks the relay and the sweep queue, where this version has them; one id
at a time otherwise, so the same script measures the version before).
Printed per phase: CPU milliseconds per item (this process: Python,
psycopg, the Redis client publishing what the step queues), wall
milliseconds, SQL statements per item, and the SMTP connections opened.

Coalescing is off (NUDGE_COALESCE_WINDOW=0) and the cap out of reach, so
each nudge is a send of its own. Needs DATABASE_URL (PostgreSQL; the run
makes its own database, the name given plus `_sendcost`) and REDIS_URL
(its queues are emptied after). See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

if __name__ == "__main__" and not __package__:
    from harness import reexec_as_module  # type: ignore[import-not-found]

    reexec_as_module("benchmarks.sendcost")

from benchmarks.harness import (
    PYTHON,
    ROOT,
    fresh_database,
    own_database_and_redis,
    service_env,
)

PHASES = ("dispatch", "nudge", "webhook")


def outer(args: argparse.Namespace) -> None:
    database_url, redis_url = own_database_and_redis("_sendcost")
    folder = Path(tempfile.mkdtemp(prefix="sendcost-"))
    env = service_env(database_url, redis_url, folder)
    env.update({"LOG_JSON": "0", "NUDGE_COALESCE_WINDOW": "0"})
    fresh_database(database_url, env)
    inner = [PYTHON, "-m", "benchmarks.sendcost", "--inner", *sys.argv[1:]]
    subprocess.run(inner, env=env, cwd=ROOT, check=True)  # noqa: S603 (our own script)


def _chunks(ids: list, size: int) -> list[list]:
    return [ids[i : i + size] for i in range(0, len(ids), size)]


def inner(args: argparse.Namespace) -> None:
    import cProfile
    import json
    import pstats

    from benchmarks.receiver import Receiver
    from tests.harness.smtp import SmtpSink

    sink = SmtpSink()
    receiver = Receiver()
    os.environ.update(sink.env())

    import django

    django.setup()
    import logging

    logging.disable(logging.INFO)  # a line per send would be measured too
    import redis
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from benchmarks import fixtures
    from commitments.models import OutboxEvent
    from notifications import sending as nudge_sending
    from notifications.models import NudgeDelivery
    from relay import outbox
    from webhooks import sending as webhook_sending
    from webhooks.models import WebhookDelivery

    assigner, assignee, token = fixtures.the_people(receiver.url)
    fixtures.the_commitments(assigner, assignee, args.count, 0)
    client = Client(HTTP_HOST="localhost")
    for n in range(args.count):
        for path, body, expected in (
            ("/api/v1/inbox", fixtures.inbox_body(f"cost-{n}"), 201),
            (
                "/api/v1/sync",
                {
                    "externalSystem": fixtures.SYSTEM,
                    "externalId": f"sync-{n}",
                    "status": "Completed",
                },
                200,
            ),
        ):
            response = client.post(
                path,
                data=json.dumps(body),
                content_type="application/json",
                headers={"Authorization": f"Bearer {token}"},
            )
            if response.status_code != expected:
                raise SystemExit(f"{path}: {response.status_code} {response.content[:300]!r}")

    # The worker's entry points: batches where this version has them.
    batch = args.batch

    def dispatch(ids: list) -> None:
        many = getattr(outbox, "outbox_events_dispatch", None)
        if many:
            for chunk in _chunks(ids, batch):
                many(events=[(event_id, "") for event_id in chunk])
        else:
            for event_id in ids:
                outbox.outbox_event_dispatch(event_id=event_id)

    def nudge(ids: list) -> None:
        many = getattr(nudge_sending, "nudges_send", None)
        if many:
            for chunk in _chunks(ids, batch):
                many(delivery_ids=chunk)
        else:
            for delivery_id in ids:
                nudge_sending.nudge_send(delivery_id=delivery_id)

    def webhook(ids: list) -> None:
        many = getattr(webhook_sending, "webhooks_send", None)
        if many:
            for chunk in _chunks(ids, batch):
                many(delivery_ids=chunk)
        else:
            for delivery_id in ids:
                webhook_sending.webhook_send(delivery_id=delivery_id)

    phases: dict[str, tuple[Callable[[list], None], Callable[[], list]]] = {
        "dispatch": (
            dispatch,
            lambda: list(
                OutboxEvent.objects.filter(dispatched_at__isnull=True)
                .order_by("id")
                .values_list("id", flat=True)
            ),
        ),
        "nudge": (
            nudge,
            lambda: list(
                NudgeDelivery.objects.filter(status="pending")
                .order_by("created_at")
                .values_list("id", flat=True)
            ),
        ),
        "webhook": (
            webhook,
            lambda: list(
                WebhookDelivery.objects.filter(status="pending")
                .order_by("created_at")
                .values_list("id", flat=True)
            ),
        ),
    }
    print(
        f"{'phase':9} {'items':>6} {'cpu ms':>8} {'wall ms':>8} {'queries':>8} {'smtp conns':>10}"
    )
    for name in PHASES:
        run, ids_of = phases[name]
        ids = ids_of()
        profiler = cProfile.Profile() if args.cprofile == name else None
        smtp_before = sink.connections
        connection.queries_log.clear()  # it keeps the last 9,000
        cpu0, wall0 = time.process_time(), time.perf_counter()
        with CaptureQueriesContext(connection) as queries:
            if profiler:
                profiler.enable()
            run(ids)
            if profiler:
                profiler.disable()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        n = max(1, len(ids))
        print(
            f"{name:9} {len(ids):6} {cpu * 1000 / n:8.2f} {wall * 1000 / n:8.2f} "
            f"{len(queries) / n:8.1f} {sink.connections - smtp_before:10}"
        )
        if profiler:
            print(f"\ncProfile of the {name} phase, by cumulative time:")
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.top)
    sent = {
        "mails": len(sink.message_ids),
        "distinct mails": len(set(sink.message_ids)),
        "webhooks": len(receiver.ids),
        "distinct webhooks": len(set(receiver.ids)),
    }
    print(", ".join(f"{k}: {v}" for k, v in sent.items()))
    # What the steps queued (no worker ran to take it).
    redis.Redis.from_url(os.environ["REDIS_URL"]).delete("celery", "nudges", "webhooks")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--count", type=int, default=300, help="Inbox calls (and completing syncs)."
    )
    parser.add_argument("--batch", type=int, default=20, help="Ids per batch task.")
    parser.add_argument("--cprofile", choices=PHASES, help="Profile this phase.")
    parser.add_argument("--top", type=int, default=40, help="Functions printed by --cprofile.")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        inner(args)
    else:
        outer(args)


if __name__ == "__main__":
    main()
