"""The benchmark: the service as production runs it, loaded from another core.

    python -m benchmarks.run                 # the full run (several minutes)
    python -m benchmarks.run --smoke         # under a minute: short, fewer steps
    python -m benchmarks.run --parts floor,inbox --duration 20 --concurrency 8,64

Needs DATABASE_URL (PostgreSQL: the run makes and drops its own database, the
name given plus `_bench`), REDIS_URL, `taskset` and `pgbench`. See
docs/benchmarks.md for what each figure is.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

if __name__ == "__main__" and not __package__:
    # Run as a script, benchmarks/ is the first entry of sys.path.
    from harness import reexec_as_module  # type: ignore[import-not-found]

    reexec_as_module("benchmarks.run")

import psycopg
import redis

from benchmarks import ratios, sustained
from benchmarks.harness import (
    ENDPOINTS,
    PYTHON,
    ROOT,
    Service,
    cpu_model,
    fetch_row,
    free_port,
    fresh_database,
    gunicorn_command,
    load,
    log,
    make_stage,
    needs_tools,
    now_iso,
    own_database_and_redis,
    service_env,
    start_bare_floor,
    wait_for_http,
    write_results,
)
from benchmarks.receiver import Receiver
from tests.harness.fake_provider import FakeProvider

ALL_PARTS = ("bare", "first", "floor", "inbox", "sync", "replay", "gather", "pgbench", "worker")
GATHER_TEXT = (
    "Notes from the planning meeting. Dana will send the budget to finance by Friday. "
    "Lee said he would review the hiring plan next week."
)
COMPLETED = 200  # Completed commitments the replay cycles through


def _load_one(args, ctx, name: str, headers: dict, counters: dict, label: str, **shape) -> dict:
    """One load run of endpoint `name` (closed loop: concurrency=; open loop:
    rate=), continuing the endpoint's numbering where the last run stopped."""
    path, body, expect = ENDPOINTS[name]
    spec = {
        "port": ctx["port"],
        "path": path,
        "headers": headers,
        "body": body,
        "expect": expect,
        "duration": args.duration,
        "first": counters[name],
        **shape,
    }
    if name == "sync":
        spec["limit"] = max(0, ctx["active"] - counters[name])
    if name == "replay":
        spec["modulo"] = ctx["completed"]
    log(f"{name}: {label}")
    result = load(args.load_cpu, spec)
    counters[name] = result["next"]
    return result


def http_endpoints(args, ctx, results: dict) -> None:
    token = ctx["token"]
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    counters = {"inbox": 0, "sync": 0, "replay": 0, "floor": 0}
    for name in ("floor", "inbox", "sync", "replay"):
        if name not in args.parts:
            continue
        rows = []
        for concurrency in args.concurrency:
            label = f"closed loop, concurrency {concurrency}"
            rows.append(
                _load_one(args, ctx, name, headers, counters, label, concurrency=concurrency)
            )
        peak = max((r["rps"] for r in rows), default=0.0)
        if peak and args.rate_fraction > 0:
            rate = round(peak * args.rate_fraction, 1)
            label = f"open loop, {rate}/s ({args.rate_fraction:.0%} of the closed-loop peak)"
            rows.append(_load_one(args, ctx, name, headers, counters, label, rate=rate))
        results["http"][name] = rows


def bare_floor(bench: Bench) -> None:
    """The bare floor (benchmarks/bare/): the floor's call in a bare Django
    project, served by the same interpreter with the same gunicorn settings
    and workers on the same core, against the same database, loaded at the
    same concurrencies; measured just before the service starts, then
    stopped, so the two never share the core."""
    args, ctx = bench.args, bench.ctx
    service, port = start_bare_floor(
        bench.folder, bench.env, workers=args.workers, cpu=args.server_cpu, name="gunicorn-bare"
    )
    try:
        headers = {"Authorization": f"Bearer {ctx['token']}", "Content-Type": "application/json"}
        counters = {"floor": 0}
        rows = []
        for concurrency in args.concurrency:
            label = f"bare, closed loop, concurrency {concurrency}"
            rows.append(
                _load_one(
                    args,
                    {**ctx, "port": port},
                    "floor",
                    headers,
                    counters,
                    label,
                    concurrency=concurrency,
                )
            )
        bench.results["http"]["bare"] = rows
    finally:
        service.stop_all()


def first_requests(args, ctx, results: dict) -> None:
    """The first calls after the server started: none may pay for the imports."""
    spec = {
        "port": ctx["port"],
        "path": ENDPOINTS["floor"][0],
        "headers": {"Authorization": f"Bearer {ctx['token']}"},
        "body": "{}",
        "concurrency": 1,
        "duration": 60,
        "limit": 10 * args.workers,
        "keep_latencies": True,
    }
    result = load(args.load_cpu, spec)
    results["first_requests"] = {
        "calls": result["requests"],
        "p50_ms": result["p50_ms"],
        "max_ms": result["max_ms"],
        "errors": result["errors"],
    }


def gather(args, ctx, fake_port: int, results: dict) -> None:
    """gather's overhead: POST /api/gather (session, CSRF, the model key read
    and decrypted, the prompt built, the SDK's call to a fake provider that
    answers at once with no drafts, the answer checked) against the same
    provider called directly with the same load generator."""
    session = ctx["session"]
    gather_spec = {
        "port": ctx["port"],
        "path": "/api/gather",
        "headers": {
            "Cookie": f"sessionid={session['sessionid']}; csrftoken={session['csrfcookie']}",
            "X-CSRFToken": session["csrfheader"],
            "Content-Type": "application/json",
        },
        "body": json.dumps({"text": GATHER_TEXT}),
        "expect": [200],
        "duration": args.duration,
    }
    direct_spec = {
        "port": fake_port,
        "path": "/v1/chat/completions",
        "headers": {"Authorization": "Bearer sk-bench", "Content-Type": "application/json"},
        "body": json.dumps(
            {"model": "bench", "messages": [{"role": "user", "content": GATHER_TEXT}]}
        ),
        "expect": [200],
        "duration": args.duration,
    }
    rows = []
    for concurrency in [c for c in args.concurrency if c <= 8]:
        log(f"gather: concurrency {concurrency}, and the provider alone")
        through = load(args.load_cpu, {**gather_spec, "concurrency": concurrency})
        direct = load(args.load_cpu, {**direct_spec, "concurrency": concurrency})
        rows.append(
            {
                "concurrency": concurrency,
                "gather": through,
                "provider": direct,
                "overhead_p50_ms": _minus(through["p50_ms"], direct["p50_ms"]),
                "overhead_p99_ms": _minus(through["p99_ms"], direct["p99_ms"]),
            }
        )
    results["gather"] = rows


def _minus(a: float | None, b: float | None) -> float | None:
    return round(a - b, 2) if a is not None and b is not None else None


def pgbench(args, ctx, results: dict, database_url: str, folder: Path) -> None:
    """The database ceiling: the statements of one inbox call, in one
    transaction, at the same concurrency."""
    statements = [
        s
        for s in ctx["inbox_statements"]
        if not s.upper().startswith(
            ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO")
        )
    ]
    script = folder / "inbox.sql"
    script.write_text(pgbench_script(statements, ctx["existing_ids"]))
    rows = []
    for concurrency in args.concurrency:
        run_dir = folder / f"pgbench-{concurrency}"
        run_dir.mkdir(exist_ok=True)
        log(f"pgbench: concurrency {concurrency}")
        rows.append(pgbench_run(args, script, database_url, concurrency, run_dir))
    results["pgbench"] = {"statements": len(statements), "runs": rows}


def pgbench_script(statements: list[str], existing_ids: list[str]) -> str:
    """The statements as one pgbench transaction. New rows' ids and the
    external id are made unique per transaction from pgbench's random :n;
    the ids of rows the call read (`existing_ids`) are kept."""
    new_ids: list[str] = []
    # psycopg writes a UUID as 32 hex digits; Django's JSON payloads with dashes.
    uuid_re = re.compile(
        r"'([0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})'"
    )
    existing = set()
    for value in existing_ids:
        existing |= {value, value.replace("-", "")}
    for sql in statements:
        for value in uuid_re.findall(sql):
            if value not in existing and value not in new_ids:
                new_ids.append(value)
    script = ["\\set n random(1, 4000000000000)", "BEGIN;"]
    for sql in statements:
        for k, value in enumerate(new_ids):
            sql = sql.replace(f"'{value}'", f"md5((:n)::text || '{k}')::uuid")
        sql = sql.replace("'captured-2'", "('pgb-' || (:n)::text)")
        script.append(" ".join(sql.split()) + ";")
    script.append("COMMIT;")
    return "\n".join(script) + "\n"


def pgbench_run(args, script: Path, database_url: str, concurrency: int, run_dir: Path) -> dict:
    """One pgbench run on the load's core; latencies from its per-transaction log."""
    parts = urlsplit(database_url)
    command = [
        *("taskset", "-c", args.load_cpu, "pgbench", "-n", "-l"),
        *("-c", str(concurrency), "-j", "1", "-T", str(max(1, round(args.duration)))),
        *("-f", str(script), "-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432)),
        *("-U", parts.username or "postgres", parts.path.lstrip("/")),
    ]
    env = dict(os.environ, PGPASSWORD=parts.password or "")
    done = subprocess.run(  # noqa: S603
        command, cwd=run_dir, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    latencies = []
    for log_file in run_dir.glob("pgbench_log.*"):
        for line in log_file.read_text().splitlines():
            fields = line.split()
            if len(fields) >= 3 and fields[2].isdigit():
                latencies.append(int(fields[2]) / 1000)
    latencies.sort()
    tps = re.search(r"tps = ([\d.]+)", done.stdout)
    failed = re.search(r"number of failed transactions: (\d+)", done.stdout)
    return {
        "concurrency": concurrency,
        "tps": round(float(tps.group(1)), 1) if tps else 0.0,
        "p50_ms": round(statistics.median(latencies), 2) if latencies else None,
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 2) if latencies else None,
        "errors": int(failed.group(1)) if failed else (0 if done.returncode == 0 else -1),
        "stderr": done.stderr[-500:] if done.returncode else "",
    }


def drain(
    count,
    start_timeout: float,
    window: float,
    idle: float = 10.0,
    waiting=lambda: False,
) -> dict:
    """Poll a delivered count: wait for it to move (the worker starts, and a
    stream starts only once the dispatch reaches the events that make it:
    the HTTP parts' inbox events come before their syncs', so the webhooks
    start late), for as long as `waiting()` says its work is still coming
    (outbox events not dispatched), then for `start_timeout` s more; then
    follow it for at most `window` s from its own first change, or until it
    stands still for `idle` s while nothing is `waiting()`; the rate from its
    first to its last change. `still_going`: the window ended first (the
    backlog was larger than the window: a lower bound)."""
    start = time.monotonic()
    first_at: float | None = None
    last_at = start  # read only once first_at is set, and set with it
    first_count = last_count = count()
    still_going = False
    while True:
        time.sleep(0.25)
        now, value = time.monotonic(), count()
        if value != last_count:
            if first_at is None:
                first_at, first_count = now, last_count
            last_at, last_count = now, value
        if first_at is None:
            if waiting():
                start = now
            elif now - start > start_timeout:
                break
        elif now - last_at > idle and not waiting():
            break
        elif now - first_at > window:
            still_going = True
            break
    made = last_count - first_count
    seconds = (last_at - first_at) if first_at else 0.0
    return {
        "made": made,
        "seconds": round(seconds, 2),
        "per_second": round(made / seconds, 1) if seconds > 0 else None,
        "still_going": still_going,
    }


UNDISPATCHED_SQL = "SELECT count(*) FROM commitments_outboxevent WHERE dispatched_at IS NULL"


def worker_rates(bench: Bench) -> None:
    """Start the worker on the server's core once the HTTP parts queued their
    work, then measure how fast it drains: nudges (e-mail, written by the
    file backend) and outbound webhook deliveries to the local receiver,
    each stream from its own start. Coalescing is off, as in the sustained
    part: the HTTP parts ask a few people many times, and with it each of
    them got one mail every NUDGE_COALESCE_WINDOW, so the nudges' rate was
    the window's, not the worker's."""
    args, receiver = bench.args, bench.receiver
    bench.service.start(
        "worker",
        ["taskset", "-c", args.server_cpu, PYTHON, "manage.py", "run_worker", "--loglevel=WARNING"],
        dict(bench.env, NUDGE_COALESCE_WINDOW="0"),
    )
    counts = {
        # Outbox events the relay turned into deliveries.
        "dispatched": (
            "SELECT count(*) FROM commitments_outboxevent WHERE dispatched_at IS NOT NULL"
        ),
        "nudges": "SELECT count(*) FROM notifications_nudgedelivery WHERE status = 'delivered'",
    }
    done: dict[str, dict] = {}

    def measure(key: str) -> None:
        with psycopg.connect(bench.database_url, autocommit=True) as conn:
            count = (
                (lambda: len(receiver.times))
                if key == "webhooks"
                else (lambda: fetch_row(conn, counts[key])[0])
            )
            done[key] = drain(
                count,
                start_timeout=args.drain_timeout,
                window=args.drain_window,
                # The dispatch's own rate ends with its backlog.
                waiting=(lambda: False)
                if key == "dispatched"
                else (lambda: fetch_row(conn, UNDISPATCHED_SQL)[0] > 0),
            )

    log("worker: draining the outbox, nudges and webhook deliveries")
    threads = [threading.Thread(target=measure, args=(k,)) for k in (*counts, "webhooks")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    bench.results["worker"] = done


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def summarize(results: dict) -> str:
    lines = []
    http = results["http"]
    bare = {r["concurrency"]: r for r in http.get("bare", []) if r["mode"] == "closed"}
    floor = {r["concurrency"]: r for r in http.get("floor", []) if r["mode"] == "closed"}
    pg = {r["concurrency"]: r for r in results.get("pgbench", {}).get("runs", [])}
    lines.append(
        f"{'part':<8} {'mode':<14} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>9} {'errors':>6} "
        f"{'x bare':>6} {'x floor':>7} {'x db':>6} {'lg cpu':>6}"
    )
    for name, rows in http.items():
        for r in rows:
            mode = f"c={r['concurrency']}" if r["mode"] == "closed" else f"rate={r['rate']}/s"
            b = bare.get(r["concurrency"]) if r["mode"] == "closed" else None
            f = floor.get(r["concurrency"]) if r["mode"] == "closed" and name != "bare" else None
            p = pg.get(r["concurrency"]) if r["mode"] == "closed" else None
            lines.append(
                f"{name:<8} {mode:<14} {r['rps']:>8} {r['p50_ms']!s:>8} {r['p99_ms']!s:>9} "
                f"{r['errors']:>6} {ratio(r['rps'], b and b['rps'])!s:>6} "
                f"{ratio(r['rps'], f and f['rps'])!s:>7} "
                f"{ratio(r['rps'], p and p['tps'])!s:>6} {r['cpu_busy']:>6}"
            )
    for r in results.get("pgbench", {}).get("runs", []):
        lines.append(
            f"{'pgbench':<8} {'c=' + str(r['concurrency']):<14} {r['tps']:>8} {r['p50_ms']!s:>8} "
            f"{r['p99_ms']!s:>9} {r['errors']:>6}"
        )
    for r in results.get("gather", []):
        g = r["gather"]
        lines.append(
            f"{'gather':<8} {'c=' + str(r['concurrency']):<14} {g['rps']:>8} {g['p50_ms']!s:>8} "
            f"{g['p99_ms']!s:>9} {g['errors']:>6}  overhead over the provider: "
            f"p50 {r['overhead_p50_ms']} ms, p99 {r['overhead_p99_ms']} ms"
        )
    if "first_requests" in results:
        f = results["first_requests"]
        lines.append(
            f"first {f['calls']} calls after start: p50 {f['p50_ms']} ms, max {f['max_ms']} ms"
        )
    for key, value in results.get("worker", {}).items():
        more = " (still going: a lower bound)" if value.get("still_going") else ""
        lines.append(
            f"{key}: {value.get('made')} in {value.get('seconds')} s = "
            f"{value.get('per_second')}/s{more}"
        )
    lines += ratios.summary_lines(results)
    lines += sustained.summary_lines(results)
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="A short run (under a minute).")
    parser.add_argument("--duration", type=float, default=10.0, help="Seconds per measurement.")
    parser.add_argument("--concurrency", default="1,8,64")
    parser.add_argument(
        "--parts",
        default=",".join(ALL_PARTS),
        help=",".join(ALL_PARTS) + " (all by default), and ratios, sustained (only when named)",
    )
    parser.add_argument(
        "--rate-fraction",
        type=float,
        default=0.7,
        help="The open-loop rate, as a share of the closed-loop peak (0: none).",
    )
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers.")
    parser.add_argument("--server-cpu", default="0")
    parser.add_argument("--load-cpu", default="1")
    parser.add_argument(
        "--active", type=int, default=20000, help="Active commitments to complete by sync."
    )
    parser.add_argument(
        "--history",
        type=int,
        default=50000,
        help="Past commitments in the stage, with what they left (fixtures.py's HISTORY).",
    )
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=120.0,
        help="Seconds to wait for the worker's first nudge or webhook.",
    )
    parser.add_argument(
        "--drain-window",
        type=float,
        default=60.0,
        help="Seconds at most to follow the worker's rates.",
    )
    parser.add_argument("--out", default=str(ROOT / "var" / "benchmarks" / "latest.json"))
    parser.add_argument("--keep", action="store_true", help="Keep the run's folder (logs).")
    ratios.add_arguments(parser)
    sustained.add_arguments(parser)
    args = parser.parse_args()
    if args.smoke:
        args.duration = min(args.duration, 1.5)
        args.concurrency = "1,8"
        args.active = min(args.active, 2000)
        args.history = min(args.history, 5000)
        args.drain_timeout = min(args.drain_timeout, 10.0)
        args.drain_window = min(args.drain_window, 3.0)
        args.ratio_rounds = min(args.ratio_rounds, 2)
        args.ratio_duration = min(args.ratio_duration, 1.0)
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    args.parts = set(args.parts.split(","))
    ratios.check_args(args)
    sustained.check_args(args)
    return args


class Bench:
    """One run: its options, its folder (logs, mail, pgbench's files), the
    local receiver and fake provider, the service's environment and processes,
    the stage (`ctx`: fixtures.py's answer and the server's port) and the
    results as they come."""

    def __init__(self, args: argparse.Namespace, database_url: str, redis_url: str) -> None:
        self.args, self.database_url, self.redis_url = args, database_url, redis_url
        self.folder = Path(tempfile.mkdtemp(prefix="bench-"))
        self.receiver = Receiver()
        self.provider = FakeProvider().start()
        self.env = service_env(database_url, redis_url, self.folder)
        self.env.update(
            {
                "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
                "EMAIL_FILE_PATH": str(self.folder / "mail"),
                "WEB_CONCURRENCY": str(args.workers),
                "OPENAI_BASE_URL": self.provider.openai_base_url,
                "GATHER_RATE_BURST": "1000000000",
                "GATHER_RATE_PER_HOUR": "1000000000",
            }
        )
        self.service = Service(self.folder)
        self.ctx: dict = {}
        self.results: dict = {
            "date": now_iso(),
            "machine": {
                "cpus": os.cpu_count(),
                "cpu": cpu_model(),
                "python": platform.python_version(),
                "load_average": os.getloadavg(),
            },
            "settings": {
                "duration": args.duration,
                "concurrency": args.concurrency,
                "gunicorn_workers": args.workers,
                "server_cpu": args.server_cpu,
                "load_cpu": args.load_cpu,
                "rate_fraction": args.rate_fraction,
                "history": args.history,
            },
            "http": {},
        }

    def stop(self) -> None:
        self.service.stop_all()
        self.receiver.server.shutdown()
        self.provider.stop()
        if self.args.keep:
            log(f"logs kept in {self.folder}")
        else:
            shutil.rmtree(self.folder, ignore_errors=True)


def a_database_of_its_own(bench: Bench) -> None:
    """A fresh database (cloned from the migrated template) and empty queues."""
    log(f"database {urlsplit(bench.database_url).path.lstrip('/')}: fresh")
    fresh_database(bench.database_url, bench.env)
    client = redis.Redis.from_url(bench.redis_url)
    client.delete("celery", "webhooks", "unacked", "unacked_index")
    client.close()


def the_stage(bench: Bench) -> None:
    bench.ctx = make_stage(
        bench.env,
        active=bench.args.active,
        completed=COMPLETED,
        receiver_url=bench.receiver.url,
        gather="gather" in bench.args.parts,
        history=bench.args.history,
    )


def the_server(bench: Bench) -> None:
    """gunicorn as production starts it, pinned to the server's core."""
    args = bench.args
    port = bench.ctx["port"] = free_port()
    log(f"gunicorn: {args.workers} workers on CPU {args.server_cpu}, port {port}")
    bench.service.start(
        "gunicorn",
        ["taskset", "-c", args.server_cpu, *gunicorn_command(args.workers)],
        dict(bench.env, PORT=str(port)),
    )
    wait_for_http(port)


def the_measurements(bench: Bench) -> None:
    """The parts asked for, in the order docs/benchmarks.md gives them: the
    worker last, so it does not share the server's core with the HTTP parts."""
    args, ctx, results = bench.args, bench.ctx, bench.results
    if "first" in args.parts:
        first_requests(args, ctx, results)
    http_endpoints(args, ctx, results)
    if "ratios" in args.parts:
        ratios.ratios(bench)
    if "gather" in args.parts:
        fake_port = urlsplit(bench.provider.url).port
        assert fake_port is not None  # the fake provider's URL names its port
        gather(args, ctx, fake_port, results)
    if "pgbench" in args.parts:
        pgbench(args, ctx, results, bench.database_url, bench.folder)
    if "worker" in args.parts:
        worker_rates(bench)
    if "sustained" in args.parts:
        sustained.sustained(bench)


def main() -> None:
    args = parse_args()
    needs_tools("taskset", "pgbench")
    database_url, redis_url = own_database_and_redis("_bench")
    # This process (the receiver, the polling) stays off the server's core too.
    os.sched_setaffinity(0, {int(args.load_cpu)})
    bench = Bench(args, database_url, redis_url)
    try:
        a_database_of_its_own(bench)
        the_stage(bench)
        if "bare" in args.parts:
            bare_floor(bench)
        the_server(bench)
        the_measurements(bench)
    finally:
        bench.stop()
    write_results(bench.results, args.out, summarize(bench.results))


if __name__ == "__main__":
    main()
