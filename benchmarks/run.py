"""The benchmark: the service as production runs it, loaded from another core.

    python benchmarks/run.py                 # the full run (several minutes)
    python benchmarks/run.py --smoke         # under a minute: short, fewer steps
    python benchmarks/run.py --parts floor,inbox --duration 20 --concurrency 8,64

Needs DATABASE_URL (PostgreSQL: the run makes and drops its own database, the
name given plus `_bench`), REDIS_URL, `taskset` and `pgbench`. See
docs/benchmarks.md for what each figure is.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import hashlib
import json
import os
import platform
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the fake provider of the gather tests

from benchmarks.receiver import Receiver  # noqa: E402

PYTHON = sys.executable
ALL_PARTS = ("first", "floor", "inbox", "sync", "replay", "gather", "pgbench", "worker")
GATHER_TEXT = (
    "Notes from the planning meeting. Dana will send the budget to finance by Friday. "
    "Lee said he would review the hiring plan next week."
)
ENDPOINTS = {
    # name: (path, body, expected statuses)
    "floor": ("/api/bench/floor", "{}", [200]),
    "inbox": (
        "/api/v1/inbox",
        json.dumps(
            {
                "assignerEmail": "bench-assigner@example.com",
                "assigneeEmail": "bench-assignee@example.com",
                "description": "Benchmark commitment",
                "deadline": "2030-03-01T17:00:00Z",
                "externalSystem": "bench",
                "externalId": "load-{n}",
            }
        ),
        [201],
    ),
    "sync": (
        "/api/v1/sync",
        json.dumps({"externalSystem": "bench", "externalId": "sync-{n}", "status": "Completed"}),
        [200],
    ),
    "replay": (
        "/api/v1/sync",
        json.dumps({"externalSystem": "bench", "externalId": "done-{m}", "status": "Completed"}),
        [200],
    ),
}


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- processes ------------------------------------------------------------------------


class Service:
    """The server processes, each in its own process group, killed at exit."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs: list[subprocess.Popen] = []

    def start(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        out = (self.folder / f"{name}.log").open("ab")
        proc = subprocess.Popen(  # noqa: S603 (our own commands)
            args, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        out.close()
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def gunicorn_command(workers: int) -> list[str]:
    """The server as production starts it (config/gunicorn.py), `workers` workers."""
    return [
        *(PYTHON, "-m", "gunicorn", "config.wsgi:application"),
        *("--config", "python:config.gunicorn", "--workers", str(workers)),
    ]


def run_checked(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(  # noqa: S603
        args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done.stdout


def service_env(
    database_url: str, redis_url: str, folder: Path, settings: str = "benchmarks.settings"
) -> dict[str, str]:
    """The environment of the benchmark's service: the benchmark's settings
    (production's, DEBUG=0), fresh secrets, its database and Redis, no cap on
    nudges and no rate limit (they would measure themselves, not the calls).
    No PORT: gunicorn's is given where it starts."""
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": settings,
            "PYTHONPATH": str(ROOT),
            "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "FIELD_ENCRYPTION_KEYS": base64.urlsafe_b64encode(os.urandom(32)).decode(),
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "VAR_DIR": str(folder / "var"),
            "NUDGE_CAP": "1000000000",
            "API_RATE_BURST": "0",
        }
    )
    env.pop("PORT", None)
    return env


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def own_database_and_redis(suffix: str) -> tuple[str, str]:
    """The run's database (DATABASE_URL's name plus `suffix`) and REDIS_URL."""
    base_url, redis_url = os.environ.get("DATABASE_URL"), os.environ.get("REDIS_URL")
    if not base_url or not base_url.startswith("postgres") or not redis_url:
        raise SystemExit("Set DATABASE_URL (PostgreSQL) and REDIS_URL.")
    return with_database(base_url, urlsplit(base_url).path.lstrip("/") + suffix), redis_url


def migrations_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:10]


def fresh_database(url: str, env: dict[str, str]) -> None:
    """The run's database, empty and migrated: cloned from a migrated template
    (`<name>_t<digest of the migrations>`, made by the first run after a
    migration changed), which is much faster than migrating each run."""
    name = urlsplit(url).path.lstrip("/")
    template = f"{name}_t{migrations_digest()}"
    admin = with_database(url, "postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [template]).fetchone()
        if exists:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
            return
        stale = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s", [f"{name}\\_t%"]
        ).fetchall()
        for (old,) in stale:
            conn.execute(f'DROP DATABASE IF EXISTS "{old}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    log("migrating (once per change of the migrations)")
    run_checked([PYTHON, "manage.py", "migrate", "--noinput"], env)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{template}" TEMPLATE "{name}"')


# --- load -----------------------------------------------------------------------------


def load(args: argparse.Namespace, spec: dict) -> dict:
    """One measurement by benchmarks/load.py, pinned to the load's core."""
    command = ["taskset", "-c", args.load_cpu, PYTHON, str(ROOT / "benchmarks" / "load.py")]
    # Its own length, plus the last calls' answers (each bounded by spec["timeout"]).
    limit = float(spec["duration"]) + float(spec.get("timeout", 30)) + 60
    out = subprocess.run(  # noqa: S603
        [*command, json.dumps(spec)], capture_output=True, text=True, check=True, timeout=limit
    )
    return json.loads(out.stdout)


def wait_for_http(port: int, path: str = "/healthz", timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
                if sock.recv(12).endswith(b"200"):
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"The server on {port} did not answer {path} within {timeout:.0f} s.")


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
    result = load(args, spec)
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
    result = load(args, spec)
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
        through = load(args, {**gather_spec, "concurrency": concurrency})
        direct = load(args, {**direct_spec, "concurrency": concurrency})
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
    transaction, at the same concurrency. New rows' ids and the external id
    are made unique per transaction from pgbench's random :n."""
    statements = [
        s
        for s in ctx["inbox_statements"]
        if not s.upper().startswith(
            ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO")
        )
    ]
    new_ids: list[str] = []
    # psycopg writes a UUID as 32 hex digits; Django's JSON payloads with dashes.
    uuid_re = re.compile(
        r"'([0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})'"
    )
    existing = set()
    for value in ctx["existing_ids"]:
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
    path = folder / "inbox.sql"
    path.write_text("\n".join(script) + "\n")
    parts = urlsplit(database_url)
    rows = []
    for concurrency in args.concurrency:
        run_dir = folder / f"pgbench-{concurrency}"
        run_dir.mkdir(exist_ok=True)
        command = [
            *("taskset", "-c", args.load_cpu, "pgbench", "-n", "-l"),
            *("-c", str(concurrency), "-j", "1", "-T", str(max(1, round(args.duration)))),
            *("-f", str(path), "-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432)),
            *("-U", parts.username or "postgres", parts.path.lstrip("/")),
        ]
        env = dict(os.environ, PGPASSWORD=parts.password or "")
        log(f"pgbench: concurrency {concurrency}")
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
        rows.append(
            {
                "concurrency": concurrency,
                "tps": round(float(tps.group(1)), 1) if tps else 0.0,
                "p50_ms": round(statistics.median(latencies), 2) if latencies else None,
                "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 2)
                if latencies
                else None,
                "errors": int(failed.group(1)) if failed else (0 if done.returncode == 0 else -1),
                "stderr": done.stderr[-500:] if done.returncode else "",
            }
        )
    results["pgbench"] = {"statements": len(statements), "runs": rows}


def drain(count, start_timeout: float, window: float, idle: float = 3.0) -> dict:
    """Poll a delivered count: wait up to `start_timeout` s for it to move
    (the worker starts, the outbox events are dispatched first), then follow
    it for at most `window` s, or until it stands still for `idle` s; the
    rate from its first to its last change. `still_going`: the window ended
    first (the backlog was larger than the window)."""
    start = time.monotonic()
    first_at = last_at = None
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
            if now - start > start_timeout:
                break
        elif now - last_at > idle:
            break
        elif now - first_at > window:
            still_going = True
            break
    made = last_count - first_count
    seconds = (last_at - first_at) if first_at and last_at else 0.0
    return {
        "made": made,
        "seconds": round(seconds, 2),
        "per_second": round(made / seconds, 1) if seconds > 0 else None,
        "still_going": still_going,
    }


def worker_rates(args, service, env, database_url: str, receiver: Receiver, results) -> None:
    """Start the worker on the server's core once the HTTP parts queued their
    work, then measure how fast it drains: nudges (e-mail, written by the
    file backend) and outbound webhook deliveries to the local receiver."""
    service.start(
        "worker",
        ["taskset", "-c", args.server_cpu, PYTHON, "manage.py", "run_worker", "--loglevel=WARNING"],
        env,
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
        if key == "webhooks":
            done[key] = drain(
                lambda: len(receiver.times),
                start_timeout=args.drain_timeout,
                window=args.drain_window,
            )
            return
        with psycopg.connect(database_url, autocommit=True) as conn:
            done[key] = drain(
                lambda: conn.execute(counts[key]).fetchone()[0],
                start_timeout=args.drain_timeout,
                window=args.drain_window,
            )

    log("worker: draining the outbox, nudges and webhook deliveries")
    threads = [threading.Thread(target=measure, args=(k,)) for k in (*counts, "webhooks")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results["worker"] = done


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def summarize(results: dict) -> str:
    lines = []
    http = results["http"]
    floor = {r["concurrency"]: r for r in http.get("floor", []) if r["mode"] == "closed"}
    pg = {r["concurrency"]: r for r in results.get("pgbench", {}).get("runs", [])}
    lines.append(
        f"{'part':<8} {'mode':<14} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>9} {'errors':>6} "
        f"{'x floor':>7} {'x db':>6} {'lg cpu':>6}"
    )
    for name, rows in http.items():
        for r in rows:
            mode = f"c={r['concurrency']}" if r["mode"] == "closed" else f"rate={r['rate']}/s"
            f = floor.get(r["concurrency"]) if r["mode"] == "closed" else None
            p = pg.get(r["concurrency"]) if r["mode"] == "closed" else None
            lines.append(
                f"{name:<8} {mode:<14} {r['rps']:>8} {r['p50_ms']!s:>8} {r['p99_ms']!s:>9} "
                f"{r['errors']:>6} {ratio(r['rps'], f and f['rps'])!s:>7} "
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
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="A short run (under a minute).")
    parser.add_argument("--duration", type=float, default=10.0, help="Seconds per measurement.")
    parser.add_argument("--concurrency", default="1,8,64")
    parser.add_argument("--parts", default=",".join(ALL_PARTS), help=",".join(ALL_PARTS))
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
    args = parser.parse_args()
    if args.smoke:
        args.duration = min(args.duration, 1.5)
        args.concurrency = "1,8"
        args.active = min(args.active, 2000)
        args.drain_timeout = min(args.drain_timeout, 10.0)
        args.drain_window = min(args.drain_window, 3.0)
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    args.parts = set(args.parts.split(","))
    for tool in ("taskset", "pgbench"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is needed (Debian: util-linux, postgresql-client).")
    database_url, redis_url = own_database_and_redis("_bench")
    # This process (the receiver, the polling) stays off the server's core too.
    os.sched_setaffinity(0, {int(args.load_cpu)})

    folder = Path(tempfile.mkdtemp(prefix="bench-"))
    receiver = Receiver()
    from tests.harness.fake_provider import FakeProvider

    provider = FakeProvider().start()
    env = service_env(database_url, redis_url, folder)
    env.update(
        {
            "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
            "EMAIL_FILE_PATH": str(folder / "mail"),
            "WEB_CONCURRENCY": str(args.workers),
            "OPENAI_BASE_URL": provider.openai_base_url,
            "GATHER_RATE_BURST": "1000000000",
            "GATHER_RATE_PER_HOUR": "1000000000",
        }
    )
    results: dict = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "cpu": _cpu_model(),
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
        },
        "http": {},
    }
    service = Service(folder)
    try:
        log(f"database {urlsplit(database_url).path.lstrip('/')}: fresh")
        fresh_database(database_url, env)
        import redis

        client = redis.Redis.from_url(redis_url)
        client.delete("celery", "webhooks", "unacked", "unacked_index")
        client.close()
        completed = 200
        out = run_checked(
            [
                *(PYTHON, str(ROOT / "benchmarks" / "fixtures.py")),
                *("--active", str(args.active), "--completed", str(completed)),
                *("--receiver", receiver.url),
                *(["--gather"] if "gather" in args.parts else []),
            ],
            env,
        )
        ctx = json.loads(out.strip().splitlines()[-1])
        port = free_port()
        ctx["port"] = port
        server_env = dict(env, PORT=str(port))
        log(f"gunicorn: {args.workers} workers on CPU {args.server_cpu}, port {port}")
        service.start(
            "gunicorn",
            ["taskset", "-c", args.server_cpu, *gunicorn_command(args.workers)],
            server_env,
        )
        wait_for_http(port)
        if "first" in args.parts:
            first_requests(args, ctx, results)
        http_endpoints(args, ctx, results)
        if "gather" in args.parts:
            gather(args, ctx, urlsplit(provider.url).port, results)
        if "pgbench" in args.parts:
            pgbench(args, ctx, results, database_url, folder)
        if "worker" in args.parts:
            worker_rates(args, service, env, database_url, receiver, results)
    finally:
        service.stop_all()
        receiver.server.shutdown()
        provider.stop()
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            log(f"logs kept in {folder}")
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(results, indent=2) + "\n")
    print(summarize(results))
    print(f"\nResults: {out_path}")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    main()
