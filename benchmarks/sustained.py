"""The sustained mixed run: intake and delivery at once, end to end
(`python -m benchmarks.run --parts sustained`; docs/benchmarks.md).

Inbox calls and completing syncs, half each, at a fixed rate (open loop)
against the service as the benchmark runs it (gunicorn and `manage.py
run_worker` on the server's core, benchmarks.settings), with the nudges sent
over SMTP to a mail server on loopback (tests/harness/smtp.py) and the
webhooks to the benchmark's receiver (benchmarks/receiver.py), both in this
process on the load's core. For each call answered 201 or 200, the time from
its answer to the arrival of what it caused:

- an inbox call: the assignee's nudge (the mail names the commitment's page);
- a completing sync: the assigner's nudge, and the webhook
  `commitment.completed` (its body names the commitment).

Every second it counts the rows still to deliver (outbox events not
dispatched, nudges and webhooks not delivered nor failed): the backlog. It
is **flat** when the least-squares slope of that count over the last half of
the load is at most `--sustained-flat` (0.02) times the call rate, in rows a
second (at 100 calls a second, a growth of at most 2 rows a second), or
within twice its standard error of zero (a small queue's jitter is not
growth).

`--sustained-find` steps the rate up (times `--sustained-factor`) from
`--sustained-start` until the backlog is not flat, and reports the highest
rate at which it was.

The load is a process of its own on the load's core (`python -m
benchmarks.sustained generate JOB`): asyncio on raw sockets, one connection
a call, like benchmarks/load.py, noting each call's due time and the time it
was answered (time.monotonic, the clock every process on the machine shares).
"""

from __future__ import annotations

import asyncio
import contextlib
import email
import email.policy
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.harness import PYTHON, ROOT, fetch_row, log, run_checked
from tests.harness.smtp import SmtpSink

INBOX, SYNC = "inbox", "sync"
# (the call, what it causes): each call kind's deliveries.
STREAMS = (("inbox", "nudge"), ("sync", "nudge"), ("sync", "webhook"))
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# The rows still to deliver. Held nudges (in a digest) count: they wait too.
BACKLOG_SQL = """
SELECT
  (SELECT count(*) FROM commitments_outboxevent WHERE dispatched_at IS NULL),
  (SELECT count(*) FROM notifications_nudgedelivery
    WHERE status IN ('pending', 'sending', 'held')),
  (SELECT count(*) FROM webhooks_webhookdelivery WHERE status IN ('pending', 'sending'))
"""
MADE_SQL = """
SELECT c.external_id LIKE %(inbox)s, 'nudge', n.status, count(*)
  FROM notifications_nudgedelivery n
  JOIN commitments_outboxevent e ON e.id = n.event_id
  JOIN commitments_commitment c ON c.id = e.commitment_id
 WHERE c.external_id LIKE %(step)s
 GROUP BY 1, 3
UNION ALL
SELECT c.external_id LIKE %(inbox)s, 'webhook', w.status, count(*)
  FROM webhooks_webhookdelivery w
  JOIN commitments_commitment c ON c.id = w.commitment_id
 WHERE c.external_id LIKE %(step)s
 GROUP BY 1, 3
"""


# --- options --------------------------------------------------------------------------


def add_arguments(parser: Any) -> None:
    group = parser.add_argument_group("sustained (--parts sustained)")
    group.add_argument(
        "--sustained-rate", type=float, default=100.0, help="Calls a second, half inbox half sync."
    )
    group.add_argument("--sustained-duration", type=float, default=60.0, help="Seconds of load.")
    group.add_argument(
        "--sustained-wait",
        type=float,
        default=120.0,
        help="Seconds at most to wait, after the load, for what is still to arrive.",
    )
    group.add_argument(
        "--sustained-flat",
        type=float,
        default=0.02,
        help="Flat: the backlog's slope over the last half at most this times the rate (rows/s).",
    )
    group.add_argument(
        "--sustained-people", type=int, default=1000, help="People the inbox calls ask, in turn."
    )
    group.add_argument(
        "--sustained-find", action="store_true", help="Step the rate up until not flat."
    )
    group.add_argument(
        "--sustained-start", type=float, default=20.0, help="The search's first rate."
    )
    group.add_argument(
        "--sustained-factor", type=float, default=1.5, help="The search's step (a factor)."
    )
    group.add_argument(
        "--sustained-max", type=float, default=1000.0, help="The search's last rate."
    )


def check_args(args: Any) -> None:
    if "sustained" not in args.parts:
        return
    if "worker" in args.parts:
        raise SystemExit(
            "--parts sustained starts its own worker (mail to the SMTP sink, coalescing off): "
            "leave out `worker`."
        )
    if args.smoke:
        args.sustained_duration = min(args.sustained_duration, 10.0)
        args.sustained_wait = min(args.sustained_wait, 60.0)
    if args.parts == {"sustained"}:
        args.active = 0  # the completing sync's part's commitments: it makes its own
    if args.sustained_factor <= 1:
        raise SystemExit("--sustained-factor must be above 1.")


# --- the load (its own process) -------------------------------------------------------


def call_bodies(job: dict, n: int) -> tuple[bytes, bytes]:
    """The n-th inbox call's body (asking the people in turn) and the n-th
    completing sync's."""
    inbox = {
        "assignerEmail": job["assigner"],
        "assigneeEmail": job["person_email"].format(k=n % max(1, job["people"])),
        "description": "Benchmark commitment",
        "deadline": "2030-03-01T17:00:00Z",
        "externalSystem": job["system"],
        "externalId": f"{job['prefix']}in-{n}",
    }
    if not job["people"]:
        inbox["assigneeEmail"] = job["assignee"]
    sync = {
        "externalSystem": job["system"],
        "externalId": f"{job['prefix']}sync-{n}",
        "status": "Completed",
    }
    return json.dumps(inbox).encode(), json.dumps(sync).encode()


def http_request(job: dict, path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: localhost:{job['port']}\r\nConnection: close\r\n"
        f"Authorization: Bearer {job['token']}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def one_call(job: dict, request: bytes) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", job["port"])
    try:
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                await reader.readexactly(int(value.strip()))
        return status
    finally:
        writer.close()


async def generate(job: dict) -> dict:
    """Call i is due at start + i / rate: even i the (i // 2)-th inbox call,
    odd i the (i // 2)-th sync. Each call: [kind, n, due, answered, status]
    (status 0: no answer)."""
    interval = 1.0 / job["rate"]
    slots = asyncio.Semaphore(job.get("max_in_flight", 512))
    calls: list[list] = []
    tasks = set()
    cpu0 = time.process_time()
    start = time.monotonic() + 0.05
    end = start + job["duration"]

    async def run(kind: str, n: int, request: bytes, due: float) -> None:
        try:
            status = await asyncio.wait_for(one_call(job, request), job.get("timeout", 30))
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
            status = 0
        finally:
            slots.release()
        calls.append([kind, n, due, time.monotonic(), status])

    i = 0
    while (due := start + i * interval) < end:
        kind, n = (INBOX, i // 2) if i % 2 == 0 else (SYNC, i // 2)
        inbox_body, sync_body = call_bodies(job, n)
        request = (
            http_request(job, "/api/v1/inbox", inbox_body)
            if kind == INBOX
            else http_request(job, "/api/v1/sync", sync_body)
        )
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        await slots.acquire()  # a full window: the wait counts in the latency
        task = asyncio.create_task(run(kind, n, request, due))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        i += 1
    if tasks:
        await asyncio.gather(*tasks)
    wall = time.monotonic() - start
    return {
        "start": start,
        "end": end,
        "calls": calls,
        "cpu_busy": round((time.process_time() - cpu0) / wall, 2) if wall else 0.0,
    }


def syncs_needed(rate: float, duration: float) -> int:
    """The completing syncs a run makes (each needs its Active commitment)."""
    return math.ceil(rate * duration / 2) + 1


# --- the pure parts -------------------------------------------------------------------


def mail_commitment_ids(data: bytes) -> tuple[str, ...]:
    """The commitment ids a nudge mail names (its link to the commitment's
    page), whatever the mail's transfer encoding."""
    try:
        message = email.message_from_bytes(data, policy=email.policy.default)
        part = message.get_body(preferencelist=("plain", "html"))
        text = part.get_content() if part is not None else data.decode("utf-8", "replace")
    except (LookupError, ValueError, AttributeError):
        text = data.decode("utf-8", "replace")
    return tuple(dict.fromkeys(UUID_RE.findall(text.replace("=\r\n", "").replace("=\n", ""))))


def webhook_commitment_id(body: bytes) -> str | None:
    """The commitment id a webhook's body (its envelope) names."""
    try:
        envelope = json.loads(body)
    except ValueError:
        return None
    value = envelope.get("id") if isinstance(envelope, dict) else None
    return value if isinstance(value, str) else None


def correlate(
    calls: list[list],
    ids: dict[str, str],
    prefix: str,
    nudges: list[tuple[float, tuple[str, ...]]],
    webhooks: list[tuple[float, str | None]],
) -> dict[str, dict]:
    """Each call answered as it should be (201 inbox, 200 sync) against what
    arrived for its commitment: per stream (`inbox->nudge`, `sync->nudge`,
    `sync->webhook`), the latencies from the answer to the first arrival,
    the calls still without one, and the arrivals beyond the first (a
    duplicate). `ids` maps external ids to commitment ids; `nudges` are
    (arrival, commitment ids the mail names), `webhooks` (arrival, id)."""
    answered: dict[str, tuple[str, float]] = {}  # commitment id: (kind, answered at)
    sent = {INBOX: 0, SYNC: 0}
    for kind, n, _due, done, status in calls:
        if status != (201 if kind == INBOX else 200):
            continue
        sent[kind] += 1
        cid = ids.get(f"{prefix}{'in' if kind == INBOX else 'sync'}-{n}")
        if cid is not None:
            answered[cid] = (kind, done)
    first: dict[tuple[str, str], dict[str, float]] = {s: {} for s in STREAMS}
    duplicates = dict.fromkeys(STREAMS, 0)
    arrivals = [(t, cid, "nudge") for t, cids in nudges for cid in cids]
    arrivals += [(t, cid, "webhook") for t, cid in webhooks if cid is not None]
    for t, cid, what in sorted(arrivals):
        if cid not in answered:
            continue
        stream = (answered[cid][0], what)
        if stream not in first:
            continue
        if cid in first[stream]:
            duplicates[stream] += 1
        else:
            first[stream][cid] = t
    out = {}
    for stream in STREAMS:
        kind = stream[0]
        latencies = [t - answered[cid][1] for cid, t in first[stream].items()]
        out[f"{kind}->{stream[1]}"] = {
            "sent": sent[kind],
            "arrived": len(latencies),
            "missing": sent[kind] - len(latencies),
            "duplicates": duplicates[stream],
            "latencies": latencies,
        }
    return out


def percentile(sorted_values: list[float], p: float) -> float | None:
    """The nearest-rank percentile: the smallest value with at least p % of
    the values at or below it."""
    if not sorted_values:
        return None
    rank = math.ceil(p / 100 * len(sorted_values))
    return sorted_values[min(len(sorted_values), max(1, rank)) - 1]


def latency_figures(latencies: list[float], missing: int) -> dict[str, float | None]:
    """p50, p99 and max in seconds, a call still without its delivery
    counting as endless: a percentile that falls on one is None (more than
    the wait)."""
    values = sorted(latencies) + [math.inf] * max(0, missing)

    def seconds(value: float | None) -> float | None:
        return None if value is None or math.isinf(value) else round(value, 3)

    return {
        "p50_s": seconds(percentile(values, 50)),
        "p99_s": seconds(percentile(values, 99)),
        "max_s": seconds(values[-1] if values else None),
    }


def slope(points: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """The least-squares slope of y over x and its standard error; None with
    fewer than 3 points."""
    n = len(points)
    if n < 3:
        return None
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((x - mean_x) ** 2 for x, _ in points)
    if var == 0:
        return None
    b = sum((x - mean_x) * (y - mean_y) for x, y in points) / var
    residuals = sum((y - mean_y - b * (x - mean_x)) ** 2 for x, y in points)
    return b, math.sqrt(residuals / (n - 2) / var)


def judge_flat(
    samples: Sequence[tuple[float, float]], start: float, end: float, rate: float, tolerance: float
) -> dict[str, Any]:
    """Flat: the slope of the backlog (rows) over the last half of the load
    [start, end] is at most `tolerance` times the call rate, rows a second,
    or at most twice its standard error (growth is a trend beyond the
    jitter). None (undecided) with fewer than 5 samples in that half."""
    middle = start + (end - start) / 2
    half = [(t, float(rows)) for t, rows in samples if middle <= t <= end]
    fit = slope(half) if len(half) >= 5 else None
    if fit is None:
        trend = error = threshold = None
    else:
        trend, error = fit
        threshold = max(tolerance * rate, 2 * error)
    return {
        "slope_rows_per_s": None if trend is None else round(trend, 2),
        "slope_error_rows_per_s": None if error is None else round(error, 2),
        "threshold_rows_per_s": None if threshold is None else round(threshold, 2),
        "samples_in_last_half": len(half),
        "flat": None if trend is None or threshold is None else trend <= threshold,
    }


def per_second(times: list[float], start: float, end: float) -> float | None:
    """How many of `times` fall in [start, end], a second."""
    if end <= start:
        return None
    return round(sum(1 for t in times if start <= t <= end) / (end - start), 1)


# --- the run --------------------------------------------------------------------------


class Arrivals:
    """What arrived, parsed as it comes: nudges (arrival, commitment ids the
    mail names) from the SMTP sink, webhooks (arrival, commitment id) from
    the receiver. Appends from the two servers' threads (list.append is
    atomic); read by copying."""

    def __init__(self) -> None:
        self.nudges: list[tuple[float, tuple[str, ...]]] = []
        self.webhooks: list[tuple[float, str | None]] = []

    def nudge(self, arrival: float, data: bytes) -> None:
        self.nudges.append((arrival, mail_commitment_ids(data)))

    def webhook(self, arrival: float, body: bytes) -> None:
        self.webhooks.append((arrival, webhook_commitment_id(body)))


class Sampler:
    """Every second, the backlog's rows (outbox, nudges, webhooks) on a
    connection of its own: (time, outbox, nudges, webhooks)."""

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.samples: list[tuple[float, int, int, int]] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="backlog", daemon=True)

    def _run(self) -> None:
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            while not self.stopping.is_set():
                before = time.monotonic()
                outbox, nudges, webhooks = fetch_row(conn, BACKLOG_SQL)
                after = time.monotonic()
                self.samples.append(((before + after) / 2, outbox, nudges, webhooks))
                self.stopping.wait(max(0.0, 1.0 - (after - before)))

    def start(self) -> Sampler:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(10)

    def total(self) -> list[tuple[float, int]]:
        return [(t, o + n + w) for t, o, n, w in self.samples]

    def last(self) -> int | None:
        return sum(self.samples[-1][1:]) if self.samples else None


def backlog_now(database_url: str) -> int:
    with psycopg.connect(database_url, autocommit=True) as conn:
        return sum(fetch_row(conn, BACKLOG_SQL))


def wait_for_empty_backlog(database_url: str, timeout: float) -> int:
    """Wait up to `timeout` s for nothing to be left to deliver; the rows left."""
    deadline = time.monotonic() + timeout
    while (left := backlog_now(database_url)) and time.monotonic() < deadline:
        time.sleep(1.0)
    return left


def more_stage(bench: Any, *, people: int = 0, active: int = 0, prefix: str = "sus-") -> dict:
    """fixtures.py's `--more`: people to ask, Active commitments to complete."""
    out = run_checked(
        [
            *(PYTHON, "-m", "benchmarks.fixtures", "--more"),
            *("--people", str(people), "--active", str(active), "--prefix", prefix),
        ],
        bench.env,
    )
    return json.loads(out.strip().splitlines()[-1])


class Run:
    """The sustained part of one benchmark run: the sink, the worker sending
    to it, and the steps."""

    def __init__(self, bench: Any) -> None:
        self.bench = bench
        self.args = bench.args
        self.arrivals = Arrivals()
        self.sink = SmtpSink(on_message=self.arrivals.nudge)
        bench.receiver.on_post = self.arrivals.webhook
        self.people = more_stage(bench, people=self.args.sustained_people, active=0)
        self.steps = 0

    def worker_env(self) -> dict[str, str]:
        """The benchmark's service environment, mail by SMTP to the sink, and
        no coalescing: with it one person's news within 3 minutes come as one
        mail, and a call's own nudge has no arrival to time (the assigner is
        told of every completing sync)."""
        return dict(
            self.bench.env,
            EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
            EMAIL_HOST="127.0.0.1",
            EMAIL_PORT=str(self.sink.port),
            EMAIL_USE_TLS="0",
            NUDGE_COALESCE_WINDOW="0",
        )

    def start_worker(self) -> None:
        args = self.args
        log(f"sustained: the worker on CPU {args.server_cpu}, mail to the sink on {self.sink.port}")
        self.worker = self.bench.service.start(
            "worker-sustained",
            [
                *("taskset", "-c", args.server_cpu, PYTHON, "manage.py", "run_worker"),
                "--loglevel=WARNING",
            ],
            self.worker_env(),
        )

    def stop(self) -> None:
        self.bench.receiver.on_post = None
        self.sink.stop()

    def step(self, rate: float, duration: float, *, label: str) -> dict:
        """One run at `rate` calls a second for `duration` s, and the wait
        for what it caused."""
        args, bench = self.args, self.bench
        prefix = f"sus{self.steps}-"
        self.steps += 1
        more_stage(bench, active=syncs_needed(rate, duration), prefix=f"{prefix}sync-")
        left = wait_for_empty_backlog(bench.database_url, args.sustained_wait)
        log(f"sustained {label}: {rate}/s for {duration} s (backlog before: {left} rows)")
        job = {
            "port": bench.ctx["port"],
            "token": bench.ctx["token"],
            "assigner": bench.ctx["assigner"],
            "assignee": bench.ctx["assignee"],
            "system": bench.ctx["system"],
            "people": self.people["people"],
            "person_email": self.people["person_email"],
            "prefix": prefix,
            "rate": rate,
            "duration": duration,
        }
        cost_before = self.worker_cost()
        sampler = Sampler(bench.database_url).start()
        load = generate_in_process(args.load_cpu, job)
        ids = commitment_ids(bench.database_url, prefix)
        streams, waited = self.wait_for_arrivals(load, ids, prefix, sampler)
        sampler.stop()
        figures = self.figures(rate, duration, load, streams, waited, sampler, left, prefix)
        figures["worker_cost"] = cost_delta(cost_before, self.worker_cost(), figures["streams"])
        return figures

    def worker_cost(self) -> dict:
        """Diagnostics: the CPU seconds of the worker processes (the
        supervisor's children) and the tasks each ran, by name (Celery's
        `inspect stats`), so far."""
        cpu: dict[str, float] = {}
        for child in children_of(self.worker.pid):
            cpu[str(child)] = process_cpu_seconds(child)
        tasks: dict[str, int] = {}
        try:
            out = run_checked(
                [PYTHON, "-m", "celery", "-A", "config", "inspect", "stats", "--json", "-t", "5"],
                dict(self.worker_env(), DJANGO_SETTINGS_MODULE="benchmarks.settings"),
            )
            for node in json.loads(out.strip().splitlines()[-1]).values():
                for name, count in node.get("total", {}).items():
                    tasks[name] = tasks.get(name, 0) + count
        except (SystemExit, ValueError, IndexError):
            log("sustained: could not read the worker's task counts")
        return {"cpu": cpu, "tasks": tasks}

    def wait_for_arrivals(
        self, load: dict, ids: dict[str, str], prefix: str, sampler: Sampler
    ) -> tuple[dict, float]:
        """Until every call's deliveries arrived and the backlog is empty
        (or 10 s more went by: rows of earlier parts), or nothing is left to
        deliver and nothing came for 3 s, or --sustained-wait ran out."""
        end = load["end"]
        deadline = time.monotonic() + self.args.sustained_wait
        seen, quiet_since, all_since = -1, time.monotonic(), None
        while True:
            streams = correlate(
                load["calls"], ids, prefix, list(self.arrivals.nudges), list(self.arrivals.webhooks)
            )
            missing = sum(s["missing"] for s in streams.values())
            count = len(self.arrivals.nudges) + len(self.arrivals.webhooks)
            now = time.monotonic()
            if count != seen:
                seen, quiet_since = count, now
            empty = sampler.last() == 0
            settled = now >= end + 1.5  # a sample after the load's end, at least
            if settled and not missing:
                all_since = all_since or now
                if empty or now - all_since > 10:
                    break
            if settled and (now > deadline or (empty and now - quiet_since > 3)):
                break
            time.sleep(0.5)
        return streams, round(time.monotonic() - end, 1)

    def figures(
        self,
        rate: float,
        duration: float,
        load: dict,
        streams: dict,
        waited: float,
        sampler: Sampler,
        left: int,
        prefix: str,
    ) -> dict:
        start, end = load["start"], load["end"]
        middle = start + (end - start) / 2
        calls = load["calls"]
        samples = sampler.total()
        judged = judge_flat(samples, start, end, rate, self.args.sustained_flat)
        at_load_end = [rows for t, rows in samples if t <= end]
        after = [(t, rows) for t, rows in samples if t > end]
        drained = next((t - end for t, rows in after if rows == 0), None)
        made = made_counts(self.bench.database_url, prefix)
        http = {}
        for kind in (INBOX, SYNC):
            expect = 201 if kind == INBOX else 200
            mine = [c for c in calls if c[0] == kind]
            latencies = sorted(c[3] - c[2] for c in mine)
            statuses: dict[str, int] = {}
            for c in mine:
                statuses[str(c[4])] = statuses.get(str(c[4]), 0) + 1
            http[kind] = {
                "calls": len(mine),
                "answered": sum(1 for c in mine if c[4] == expect),
                "statuses": statuses,
                "p50_ms": _ms(percentile(latencies, 50)),
                "p99_ms": _ms(percentile(latencies, 99)),
                "max_ms": _ms(latencies[-1] if latencies else None),
            }
        out_streams = {}
        for name, s in streams.items():
            out_streams[name] = {
                **{k: v for k, v in s.items() if k != "latencies"},
                "made": made.get(name),
                **latency_figures(s["latencies"], s["missing"]),
            }
        ok = {
            k: [c[3] for c in calls if c[0] == k and c[4] == (201 if k == INBOX else 200)]
            for k in (INBOX, SYNC)
        }
        nudge_times = [t for t, _ in self.arrivals.nudges]
        webhook_times = [t for t, _ in self.arrivals.webhooks]
        return {
            "rate": rate,
            "duration": duration,
            "prefix": prefix,
            "load_cpu_busy": load["cpu_busy"],
            "http": http,
            "streams": out_streams,
            "waited_after_load_s": waited,
            "backlog": {
                **judged,
                "before": left,
                "max": max((rows for _, rows in samples), default=None),
                "at_load_end": at_load_end[-1] if at_load_end else None,
                "at_end": samples[-1][1] if samples else None,
                "drained_after_load_s": None if drained is None else round(drained, 1),
            },
            # Over the last half of the load: what the worker delivered, and
            # what the web took in.
            "worker": {
                "inbox_per_s": per_second(ok[INBOX], middle, end),
                "nudges_per_s": per_second(nudge_times, middle, end),
                "sync_per_s": per_second(ok[SYNC], middle, end),
                "webhooks_per_s": per_second(webhook_times, middle, end),
            },
            "samples": [[round(t - start, 2), o, n, w] for t, o, n, w in sampler.samples],
        }


def children_of(pid: int) -> list[int]:
    found = []
    for task in (Path("/proc") / str(pid) / "task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process (all its threads), in seconds."""
    try:
        fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cost_delta(before: dict, after: dict, streams: dict) -> dict:
    """What the worker spent on a step: CPU seconds and tasks run, in all and
    per delivered row (nudges and webhooks that arrived, and the outbox
    events, one a call)."""
    cpu = sum(t - before["cpu"].get(pid, 0.0) for pid, t in after["cpu"].items())
    tasks = {
        name: count - before["tasks"].get(name, 0)
        for name, count in after["tasks"].items()
        if count - before["tasks"].get(name, 0)
    }
    arrived = sum(s["arrived"] for s in streams.values())
    events = streams.get("inbox->nudge", {}).get("sent", 0) + streams.get("sync->nudge", {}).get(
        "sent", 0
    )
    total = sum(tasks.values())
    return {
        "cpu_s": round(cpu, 2),
        "tasks": tasks,
        "tasks_total": total,
        "delivered": arrived,
        "events": events,
        "cpu_ms_per_delivered": round(1000 * cpu / arrived, 2) if arrived else None,
        "tasks_per_delivered": round(total / arrived, 3) if arrived else None,
        "events_per_dispatch_task": round(
            events
            / max(
                1,
                tasks.get("relay.tasks.dispatch_events", 0)
                + tasks.get("relay.tasks.dispatch_event", 0),
            ),
            2,
        ),
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


def generate_in_process(load_cpu: str, job: dict) -> dict:
    """The load, a process of its own pinned to the load's core."""
    command = ["taskset", "-c", load_cpu, PYTHON, "-m", "benchmarks.sustained", "generate"]
    done = subprocess.run(  # noqa: S603
        [*command, json.dumps(job)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=job["duration"] + 120,
    )
    return json.loads(done.stdout)


def commitment_ids(database_url: str, prefix: str) -> dict[str, str]:
    """External id: commitment id, of the step's commitments."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT external_id, id::text FROM commitments_commitment WHERE external_id LIKE %s",
            [f"{prefix}%"],
        ).fetchall()
    return dict(rows)


def made_counts(database_url: str, prefix: str) -> dict[str, dict[str, int]]:
    """The deliveries the service made for the step's commitments, by stream
    and status (delivered, failed, pending ...)."""
    made: dict[str, dict[str, int]] = {}
    with psycopg.connect(database_url, autocommit=True) as conn:
        params = {"inbox": f"{prefix}in-%", "step": f"{prefix}%"}
        for is_inbox, what, status, count in conn.execute(MADE_SQL, params).fetchall():
            stream = f"{INBOX if is_inbox else SYNC}->{what}"
            made.setdefault(stream, {})[status] = count
    return made


def sustained(bench: Any) -> None:
    """The part: a warm-up (the worker started, the first deliveries
    through), then one run at --sustained-rate, or the search."""
    args = bench.args
    run = Run(bench)
    try:
        run.start_worker()
        warm = run.step(4.0, 2.0, label="warm-up")
        result: dict[str, Any] = {
            "flat_tolerance": args.sustained_flat,
            "people": args.sustained_people,
            "warm_up": {k: warm[k] for k in ("streams", "waited_after_load_s")},
        }
        if args.sustained_find:
            result["find"] = find(run, args)
        else:
            result["run"] = run.step(
                args.sustained_rate, args.sustained_duration, label="mixed run"
            )
        bench.results["sustained"] = result
    finally:
        run.stop()


def find(run: Run, args: Any) -> dict:
    """Rates stepped up by --sustained-factor until the backlog is not flat
    (or the wait after a step ran out with rows left to deliver)."""
    steps, rate, best = [], args.sustained_start, None
    while rate <= args.sustained_max:
        figures = run.step(round(rate, 1), args.sustained_duration, label="search")
        steps.append(figures)
        if not figures["backlog"]["flat"]:
            break
        best = figures["rate"]
        if figures["backlog"]["at_end"]:
            break  # not drained after the wait: the next step would not start clean
        rate *= args.sustained_factor
    return {"highest_flat_rate": best, "steps": steps}


# --- the table ------------------------------------------------------------------------


def _v(value: float | None, missing: int, waited: float) -> str:
    if value is None:
        return f">{waited:.0f}" if missing else "-"
    return f"{value:.2f}"


def step_lines(figures: dict, inbox_peak: float | None = None) -> list[str]:
    rate, waited = figures["rate"], figures["waited_after_load_s"]
    http, b, w = figures["http"], figures["backlog"], figures["worker"]
    lines = [
        f"sustained {rate}/s ({rate / 2:g} inbox + {rate / 2:g} sync a second) for "
        f"{figures['duration']:g} s; load cpu {figures['load_cpu_busy']}",
    ]
    for kind in (INBOX, SYNC):
        h = http[kind]
        lines.append(
            f"  {kind:<6} calls {h['calls']:>6} answered {h['answered']:>6} "
            f"p50 {h['p50_ms']} ms p99 {h['p99_ms']} ms max {h['max_ms']} ms "
            f"statuses {h['statuses']}"
        )
    lines.append(
        f"  {'answer -> arrival':<17} {'sent':>6} {'arrived':>7} {'missing':>7} {'dup':>4} "
        f"{'p50 s':>7} {'p99 s':>7} {'max s':>7}  made by the service"
    )
    for name, s in figures["streams"].items():
        lines.append(
            f"  {name:<17} {s['sent']:>6} {s['arrived']:>7} {s['missing']:>7} "
            f"{s['duplicates']:>4} {_v(s['p50_s'], s['missing'], waited):>7} "
            f"{_v(s['p99_s'], s['missing'], waited):>7} {_v(s['max_s'], s['missing'], waited):>7}"
            f"  {s['made']}"
        )
    verdict = {True: "FLAT", False: "GROWING", None: "undecided (too few samples)"}[b["flat"]]
    missing = sum(s["missing"] for s in figures["streams"].values())
    drained = (
        f"empty {b['drained_after_load_s']} s after the load"
        if b["drained_after_load_s"] is not None
        else f"{b['at_end']} rows left {waited} s after the load"
        + (": the missing ones may still come" if missing else "")
    )
    lines.append(
        f"  backlog: {verdict}: slope over the last half {b['slope_rows_per_s']} "
        f"± {b['slope_error_rows_per_s']} rows/s (flat: <= {b['threshold_rows_per_s']}); "
        f"before {b['before']}, max {b['max']}, "
        f"at the load's end {b['at_load_end']}; {drained}"
    )
    peak = f"; the inbox's closed-loop peak here {inbox_peak}/s" if inbox_peak else ""
    lines.append(
        f"  worker, last half of the load: nudges {w['nudges_per_s']}/s "
        f"(inbox answered {w['inbox_per_s']}/s, sync {w['sync_per_s']}/s: each tells one person), "
        f"webhooks {w['webhooks_per_s']}/s (sync answered {w['sync_per_s']}/s){peak}"
    )
    cost = figures.get("worker_cost")
    if cost:
        lines.append(
            f"  worker cost: {cost['cpu_s']} CPU s, {cost['tasks_total']} tasks for "
            f"{cost['delivered']} delivered ({cost['cpu_ms_per_delivered']} ms CPU and "
            f"{cost['tasks_per_delivered']} tasks a delivered row; "
            f"{cost['events_per_dispatch_task']} events a dispatch task): {cost['tasks']}"
        )
    return lines


def summary_lines(results: dict) -> list[str]:
    found = results.get("sustained")
    if not found:
        return []
    inbox = [r["rps"] for r in results.get("http", {}).get("inbox", []) if r["mode"] == "closed"]
    peak = max(inbox) if inbox else None
    lines = []
    if "run" in found:
        lines += step_lines(found["run"], peak)
    if "find" in found:
        for figures in found["find"]["steps"]:
            lines += step_lines(figures, peak)
        lines.append(
            f"sustained: highest rate with a flat backlog {found['find']['highest_flat_rate']}/s"
        )
    return lines


# --- the pure parts, checked ----------------------------------------------------------


def self_check() -> None:
    """`python -m benchmarks.sustained check`: the pure parts on made-up
    data. (The tests may not import the benchmarks: pyproject.toml.)"""
    a, b = "0" * 8 + "-0000-4000-8000-" + "0" * 12, "1" * 8 + "-1111-4111-8111-" + "1" * 12
    mail = (
        f"Subject: x\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Transfer-Encoding: quoted-printable\r\n\r\nSee https://h/c/{a[:20]}=\r\n"
        f"{a[20:]}/ and again {a}\r\n"
    ).encode()
    assert mail_commitment_ids(mail) == (a,), mail_commitment_ids(mail)
    assert webhook_commitment_id(json.dumps({"id": b}).encode()) == b
    assert webhook_commitment_id(b"not json") is None
    calls = [["inbox", 0, 0.0, 1.0, 201], ["sync", 0, 0.5, 1.5, 200], ["inbox", 1, 1.0, 2.0, 500]]
    ids = {"p-in-0": a, "p-sync-0": b}
    out = correlate(calls, ids, "p-", [(3.0, (a,)), (3.5, (a,)), (4.0, (b,))], [(2.5, b)])
    assert out["inbox->nudge"]["sent"] == 1 and out["inbox->nudge"]["latencies"] == [2.0]
    assert out["inbox->nudge"]["duplicates"] == 1
    assert out["sync->nudge"]["latencies"] == [2.5] and out["sync->webhook"]["latencies"] == [1.0]
    lost = correlate(calls, ids, "p-", [], [])
    assert lost["sync->webhook"]["missing"] == 1 and lost["inbox->nudge"]["arrived"] == 0
    assert latency_figures([0.1] * 98, 2) == {"p50_s": 0.1, "p99_s": None, "max_s": None}
    assert latency_figures(list(range(1, 101)), 0) == {"p50_s": 50, "p99_s": 99, "max_s": 100}
    assert percentile([3.0], 99) == 3.0 and percentile([], 50) is None
    assert slope([(0, 1), (1, 3), (2, 5)]) == (2.0, 0.0) and slope([(0, 1), (1, 2)]) is None
    steady = [(t, 100 + (5 if t % 2 else -5)) for t in range(60)]
    growing = [(t, 10 * t) for t in range(60)]
    assert judge_flat(steady, 0, 60, 100, 0.02)["flat"] is True
    assert judge_flat(growing, 0, 60, 100, 0.02)["flat"] is False
    assert judge_flat(growing[:3], 0, 60, 100, 0.02)["flat"] is None
    # A small queue's jitter at a low rate: a slope within its noise.
    jitter = [(t, [0, 4, 1, 5, 0, 3, 2, 6][t % 8]) for t in range(24)]
    judged = judge_flat(jitter, 0, 24, 2, 0.02)  # slope 0.16 ± 0.19, above 0.02 x 2
    assert judged["flat"] is True and judged["slope_rows_per_s"] > 0.04
    # A slow steady growth at a low rate: beyond the noise and the tolerance.
    slow = [(t, 0.3 * t + [0, 1, 0, 1][t % 4]) for t in range(40)]
    assert judge_flat(slow, 0, 40, 2, 0.02)["flat"] is False
    assert per_second([1, 2, 3, 9], 0, 4) == 0.8
    print("ok")


def main() -> None:
    if sys.argv[1:2] == ["generate"]:
        print(json.dumps(asyncio.run(generate(json.loads(sys.argv[2])))))
    elif sys.argv[1:2] == ["check"]:
        self_check()
    else:
        raise SystemExit("python -m benchmarks.run --parts sustained (docs/benchmarks.md)")


if __name__ == "__main__":
    main()
