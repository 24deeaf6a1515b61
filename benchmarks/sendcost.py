"""What the worker spends per outbox event and per send: the worker's side,
measured in one process, with no broker round trip between the steps.

    python -m benchmarks.sendcost                      # CPU, wall and queries per item
    python -m benchmarks.sendcost --cprofile nudge     # and where a nudge send's CPU goes

`--count` inbox calls and as many completing syncs (through Django's request
handler) make twice as many outbox events: each request calls for a nudge
(e-mail, to a local SMTP server: tests/harness/smtp.py), each
completion for a webhook (to the local receiver, benchmarks/receiver.py,
which answers 200 at once) and a nudge to the assigner. Then, as a worker runs
them, each phase on its own: the events dispatched, the nudges sent, the
webhooks sent, with the worker's entry points (the batch ones, in the
chunks the relay and the sweep queue, where this version has them; one id
at a time otherwise, so the same script measures the version before).
Printed per phase: CPU milliseconds per item (the thread that runs the
worker's steps: Python, psycopg, the Redis client publishing what the step
queues; not the local servers' threads, nor Django's debug cursor: the
statements are counted by an execute wrapper), wall
milliseconds, SQL statements per item (not counting the commits), and the
SMTP connections opened.

Coalescing is off (NUDGE_COALESCE_WINDOW=0) and the cap out of reach, so
each nudge is a send of its own. Needs DATABASE_URL (PostgreSQL; the run
makes its own database, the name given plus `_sendcost`) and REDIS_URL
(its queues are emptied after). See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:
    from harness import reexec_as_module  # type: ignore[import-not-found]

    reexec_as_module("benchmarks.sendcost")

from benchmarks.harness import (
    PYTHON,
    ROOT,
    fresh_database,
    outer_or_inner,
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
    """In the service's settings (the outer run gave it its database): the
    local mail server and receiver, the calls that make the work, then each
    of the worker's steps measured on the work the previous one left."""
    from benchmarks.receiver import Receiver
    from tests.harness.smtp import SmtpSink

    sink = SmtpSink()
    receiver = Receiver()
    os.environ.update(sink.env())

    import django

    django.setup()
    import logging

    logging.disable(logging.INFO)  # a line per send would be measured too
    the_calls(args.count, receiver.url)
    steps = the_worker_steps(args.batch)
    print(
        f"{'phase':9} {'items':>6} {'cpu ms':>8} {'wall ms':>8} {'queries':>8} {'smtp conns':>10}"
    )
    for name in PHASES:
        run, ids_of = steps[name]
        measured(name, run, ids_of(), sink, args)
    sent = {
        "mails": len(sink.message_ids),
        "distinct mails": len(set(sink.message_ids)),
        "webhooks": len(receiver.ids),
        "distinct webhooks": len(set(receiver.ids)),
    }
    print(", ".join(f"{k}: {v}" for k, v in sent.items()))
    # What the steps queued (no worker ran to take it).
    import redis

    redis.Redis.from_url(os.environ["REDIS_URL"]).delete("celery", "nudges", "webhooks")


def the_calls(count: int, receiver_url: str) -> None:
    """The stage's people (their webhook endpoint at the receiver) and
    `count` Active commitments, then `count` inbox calls and as many
    completing syncs through Django's request handler."""
    import json

    from django.test import Client

    from benchmarks import fixtures

    assigner, assignee, token = fixtures.the_people(receiver_url)
    fixtures.the_commitments(assigner, assignee, count, 0)
    client = Client(HTTP_HOST="localhost")
    for n in range(count):
        sync = {"externalSystem": fixtures.SYSTEM, "externalId": f"sync-{n}", "status": "Completed"}
        for path, body, expected in (
            ("/api/v1/inbox", fixtures.inbox_body(f"cost-{n}"), 201),
            ("/api/v1/sync", sync, 200),
        ):
            response = client.post(
                path,
                data=json.dumps(body),
                content_type="application/json",
                headers={"Authorization": f"Bearer {token}"},
            )
            if response.status_code != expected:
                raise SystemExit(f"{path}: {response.status_code} {response.content[:300]!r}")


# A step of the worker's: how it runs on a list of ids, and the ids it
# finds waiting.
Step = tuple[Callable[[list], None], Callable[[], list]]


def the_worker_steps(batch: int) -> dict[str, Step]:
    """Each phase's entry point of the worker's (the batch ones, `batch` ids
    a task, where this version has them; one id at a time otherwise), and
    the ids waiting for it."""
    from commitments.models import OutboxEvent
    from notifications import sending as nudge_sending
    from notifications.models import NudgeDelivery
    from relay import outbox
    from webhooks import sending as webhook_sending
    from webhooks.models import WebhookDelivery

    def dispatch(ids: list) -> None:
        many = getattr(outbox, "outbox_events_dispatch", None)
        if many:
            for chunk in _chunks(ids, batch):
                many(events=[(event_id, "") for event_id in chunk])
        else:
            for event_id in ids:
                outbox.outbox_event_dispatch(event_id=event_id)

    def by_ids(module: Any, batch_name: str, one_name: str) -> Callable[[list], None]:
        def send(ids: list) -> None:
            many = getattr(module, batch_name, None)
            if many:
                for chunk in _chunks(ids, batch):
                    many(delivery_ids=chunk)
            else:
                for delivery_id in ids:
                    getattr(module, one_name)(delivery_id=delivery_id)

        return send

    def pending(model: Any) -> Callable[[], list]:
        return lambda: list(
            model.objects.filter(status="pending")
            .order_by("created_at")
            .values_list("id", flat=True)
        )

    undispatched = OutboxEvent.objects.filter(dispatched_at__isnull=True).order_by("id")
    return {
        "dispatch": (dispatch, lambda: list(undispatched.values_list("id", flat=True))),
        "nudge": (by_ids(nudge_sending, "nudges_send", "nudge_send"), pending(NudgeDelivery)),
        "webhook": (
            by_ids(webhook_sending, "webhooks_send", "webhook_send"),
            pending(WebhookDelivery),
        ),
    }


def measured(
    name: str, run: Callable[[list], None], ids: list, sink: Any, args: argparse.Namespace
) -> None:
    """One phase run on `ids`, its row printed: CPU and wall milliseconds,
    SQL statements per item, SMTP connections opened; with --cprofile on
    this phase, where its time went."""
    import cProfile
    import pstats

    from django.db import connection

    # CPU: this thread's, the one that runs the worker's steps. The local
    # mail server and receiver answer from threads of their own in this
    # process, and their CPU is not the worker's. The profile reads the same
    # clock: the waits on PostgreSQL, Redis and the local servers left out
    # (`--profile-clock wall` keeps them).
    clock = time.thread_time if args.profile_clock == "cpu" else time.perf_counter
    profiler = cProfile.Profile(clock) if args.cprofile == name else None
    smtp_before = sink.connections
    # Counted by a wrapper, not CaptureQueriesContext: its debug cursor
    # renders every statement's text with its values, CPU the worker never
    # spends.
    statements = 0
    # --statements: per kind of statement, how many ran, the CPU spent since
    # the previous statement ended (building and compiling this one, and
    # whatever else ran between), and the CPU of its execution.
    texts: Counter[str] = Counter()
    before: dict[str, float] = {}
    during: dict[str, float] = {}
    ended = time.thread_time()

    def counted(execute: Callable, sql: str, params: Any, many: bool, context: Any) -> Any:
        nonlocal statements, ended
        statements += 1
        if args.statements != name:
            return execute(sql, params, many, context)
        kind, started = _shape(sql), time.thread_time()
        try:
            return execute(sql, params, many, context)
        finally:
            texts[kind] += 1
            before[kind] = before.get(kind, 0.0) + started - ended
            ended = time.thread_time()
            during[kind] = during.get(kind, 0.0) + ended - started

    cpu0, wall0 = time.thread_time(), time.perf_counter()
    ended = cpu0
    with connection.execute_wrapper(counted):
        if profiler:
            profiler.enable()
        run(ids)
        if profiler:
            profiler.disable()
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
    n = max(1, len(ids))
    print(
        f"{name:9} {len(ids):6} {cpu * 1000 / n:8.2f} {wall * 1000 / n:8.2f} "
        f"{statements / n:8.1f} {sink.connections - smtp_before:10}"
    )
    if texts:
        print(
            f"\nThe {name} phase's statements: each kind, how many ran, and CPU ms a run"
            " before it (since the previous one ended: building it, and all else) and in it:"
        )
        print(f"{'runs':>6} {'before':>7} {'in':>6}  statement")
        for text, times in texts.most_common():
            print(
                f"{times:6} {before[text] * 1000 / times:7.2f} {during[text] * 1000 / times:6.2f}"
                f"  {text[:120]}"
            )
    if profiler:
        print(f"\ncProfile of the {name} phase ({args.profile_clock} time), by {args.sort} time:")
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.top)


def _shape(sql: str) -> str:
    """A statement's kind: its text with runs of parameters made one."""
    return re.sub(r"%s(, %s)+", "%s, ...", " ".join(sql.split()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--count", type=int, default=300, help="Inbox calls (and completing syncs)."
    )
    parser.add_argument("--batch", type=int, default=20, help="Ids per batch task.")
    parser.add_argument("--cprofile", choices=PHASES, help="Profile this phase.")
    parser.add_argument(
        "--statements", choices=PHASES, help="Print the kinds of statements this phase ran."
    )
    parser.add_argument("--top", type=int, default=40, help="Functions printed by --cprofile.")
    parser.add_argument(
        "--profile-clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="The clock --cprofile reads (cpu: the worker's thread's CPU time).",
    )
    parser.add_argument(
        "--sort",
        choices=("cumulative", "tottime"),
        default="cumulative",
        help="--cprofile's order: cumulative, or own time (tottime).",
    )
    outer_or_inner(parser, outer, inner, inner_takes_a_path=False)


if __name__ == "__main__":
    main()
