"""What the benchmark (run.py), the fault run (faults.py), the several-hosts
run (hosts.py) and the per-call profile (callcost.py) share: the service's
processes and environment, its database, the stage (fixtures.py), the calls
they make and the load that makes them, and what the fault runs count after.

The entry scripts run as modules from the repository's root
(`python -m benchmarks.run`), like manage.py's commands: every import, this
package's, the apps' and the tests' harness (the fake model provider), is a
plain one. `reexec_as_module` keeps `python benchmarks/run.py` working.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import hashlib
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
ENDPOINTS = {
    # name: (path, body, expected statuses)
    # The in-stack floor (benchmarks/views.py); the bare floor answers the
    # same call at the same path (benchmarks/bare/).
    "floor": ("/api/v1/bench/floor", "{}", [200]),
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


def fetch_row(conn: psycopg.Connection, sql: str) -> tuple:
    """The one row a count query answers (psycopg types fetchone() as optional)."""
    row = conn.execute(sql).fetchone()
    if row is None:
        raise RuntimeError(f"No row from {sql!r}")
    return row


def reexec_as_module(name: str) -> None:
    """Started as a file (`python benchmarks/run.py`), Python put benchmarks/
    on the path, not the repository: this starts the same command again as
    the module it is, with the repository on PYTHONPATH as the service's own
    processes have it (service_env). Called before the script imports the
    package, so nothing is imported twice under two names."""
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    os.execve(PYTHON, [PYTHON, "-m", name, *sys.argv[1:]], env)  # noqa: S606 (our own script)


def outer_or_inner(
    parser: argparse.ArgumentParser,
    outer: Callable[[argparse.Namespace], None],
    inner: Callable[[argparse.Namespace], None],
    *,
    inner_takes_a_path: bool = True,
) -> None:
    """The end of the main of a script that runs in two processes (scale.py,
    sendcost.py, callcost.py): the outer run makes the database and the
    service's environment and starts the script again in it with the hidden
    --inner (a path to write to, where `inner_takes_a_path`), which measures."""
    if inner_takes_a_path:
        parser.add_argument("--inner", help=argparse.SUPPRESS)
    else:
        parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        inner(args)
    else:
        outer(args)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def needs_tools(*tools: str) -> None:
    for tool in tools:
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is needed (Debian: util-linux, postgresql-client, redis).")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def machine() -> dict:
    """What a run ran on: its cores, their model, the load average at its start."""
    return {"cpus": os.cpu_count(), "cpu": cpu_model(), "load_average": os.getloadavg()}


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def write_results(results: dict, out: str, table: str) -> None:
    """The whole result as JSON at `out`, the table on stdout."""
    out_path = Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(results, indent=2) + "\n")
    print(table)
    print(f"\nResults: {out_path}")


# --- processes ------------------------------------------------------------------------


def spawn(
    args: list[str],
    log_path: Path,
    env: dict[str, str] | None = None,
    *,
    cwd: Path = ROOT,
    own_group: bool = True,
) -> subprocess.Popen:
    """`args` started with its output appended to `log_path`, in a process
    group of its own (`own_group`: signalled whole, and not by a Ctrl-C of
    the script's)."""
    out = log_path.open("ab")
    try:
        return subprocess.Popen(  # noqa: S603 (our own commands)
            args,
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=own_group,
        )
    finally:
        out.close()


class Service:
    """The server processes, each in its own process group, killed at exit."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs: list[subprocess.Popen] = []

    def start(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        proc = spawn(args, self.folder / f"{name}.log", env)
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


class Redis:
    """redis-server as a child process, no persistence: a stop loses its queues.
    On `host` (127.0.0.1; benchmarks/hosts.py: a host's bridge address),
    started through `prefix` (there: `ip netns exec <host>`)."""

    def __init__(self, folder: Path, host: str = "127.0.0.1", prefix: tuple[str, ...] = ()) -> None:
        self.port = free_port()
        self.folder = folder
        self.host, self.prefix = host, prefix
        self.proc: subprocess.Popen | None = None
        self.url = f"redis://{host}:{self.port}/0"

    def start(self) -> None:
        self.proc = spawn(
            [
                *self.prefix,
                shutil.which("redis-server") or "redis-server",
                *("--port", str(self.port), "--bind", self.host),
                *("--save", "", "--appendonly", "no", "--daemonize", "no"),
                # Elsewhere than loopback (a private bridge) it needs no password.
                *(("--protected-mode", "no") if self.host != "127.0.0.1" else ()),
            ],
            self.folder / "redis.log",
            cwd=self.folder,
            own_group=False,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                redis.Redis(host=self.host, port=self.port, socket_timeout=1).ping()
                return
            except redis.RedisError:
                time.sleep(0.1)
        raise SystemExit("redis-server did not start.")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=15)


def gunicorn_command(workers: int) -> list[str]:
    """The server as production starts it (config/gunicorn.py), `workers` workers."""
    return [
        *(PYTHON, "-m", "gunicorn", "config.wsgi:application"),
        *("--config", "python:config.gunicorn", "--workers", str(workers)),
    ]


def bare_gunicorn_command(workers: int) -> list[str]:
    """The bare floor's server (benchmarks/bare/): the same interpreter and
    gunicorn settings, less the service's access log."""
    return [
        *(PYTHON, "-m", "gunicorn", "benchmarks.bare.wsgi:application"),
        *("--config", "python:benchmarks.bare.gunicorn", "--workers", str(workers)),
    ]


def start_bare_floor(
    folder: Path, env: dict[str, str], *, workers: int, cpu: str, name: str
) -> tuple[Service, int]:
    """The bare floor's gunicorn (`bare_gunicorn_command`) pinned to `cpu`,
    on a port of its own, answering: its processes (`stop_all`) and port."""
    port = free_port()
    log(f"{name}: the bare floor, {workers} workers on CPU {cpu}, port {port}")
    service = Service(folder)
    service.start(
        name, ["taskset", "-c", cpu, *bare_gunicorn_command(workers)], dict(env, PORT=str(port))
    )
    try:
        wait_for_http(port)
    except BaseException:
        service.stop_all()
        raise
    return service, port


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


# --- the database and the stage -------------------------------------------------------


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


def make_stage(
    env: dict[str, str],
    *,
    active: int,
    completed: int,
    receiver_url: str,
    gather: bool = False,
    history: int = 0,
) -> dict:
    """The stage in the service's database (benchmarks/fixtures.py): users, a
    token, the webhook endpoint at `receiver_url`, commitments to complete and
    to replay, and `history` past ones with what they left. Returns what
    fixtures.py printed (the token, the captured inbox statements, ...)."""
    out = run_checked(
        [
            *(PYTHON, "-m", "benchmarks.fixtures"),
            *("--active", str(active), "--completed", str(completed)),
            *("--receiver", receiver_url, "--history", str(history)),
            *(["--gather"] if gather else []),
        ],
        env,
    )
    return json.loads(out.strip().splitlines()[-1])


# --- load -----------------------------------------------------------------------------


def load(load_cpu: str, spec: dict) -> dict:
    """One measurement by benchmarks/load.py, pinned to the load's core."""
    command = ["taskset", "-c", load_cpu, PYTHON, str(ROOT / "benchmarks" / "load.py")]
    # Its own length, plus the last calls' answers (each bounded by spec["timeout"]).
    limit = float(spec["duration"]) + float(spec.get("timeout", 30)) + 60
    out = subprocess.run(  # noqa: S603
        [*command, json.dumps(spec)], capture_output=True, text=True, check=True, timeout=limit
    )
    return json.loads(out.stdout)


# Each figure of a load stream's phase kept in the results (and its table row).
LOAD_FIGURES = ("requests", "statuses", "p50_ms", "p99_ms", "max_ms")
LOAD_HEADER = f"{'phase':<12} {'stream':<6} {'requests':>8} {'p50 ms':>8} {'p99 ms':>9}  answers"


class Streams:
    """Open-loop load streams (benchmarks/load.py) run side by side, phase
    after phase (the fault runs'): each stream numbers its calls on from
    where its previous phase stopped (`counters`), and every answer is
    counted by status (`sent`)."""

    def __init__(self, load_cpu: str, names: Iterable[str]) -> None:
        self.load_cpu = load_cpu
        self.counters = {name: 0 for name in names}
        self.sent: dict[str, dict] = {name: {} for name in self.counters}

    def spec(
        self,
        name: str,
        call: tuple[str, str, list[int]],
        *,
        token: str,
        port: int,
        seconds: float,
        rate: float,
        host: str = "127.0.0.1",
        active: int | None = None,
    ) -> dict:
        """The load job of stream `name`: `call` (path, body, expected
        statuses: an ENDPOINTS entry) with `token` at `host`:`port`, `rate`
        calls a second for `seconds`; at most `active` calls in all, where
        given (the commitments the stage made for a completing sync)."""
        spec = {
            "host": host,
            "port": port,
            "path": call[0],
            "headers": {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            "body": call[1],
            "expect": call[2],
            "duration": seconds,
            "first": self.counters[name],
            "rate": rate,
            "timeout": 20,
        }
        if active is not None:
            spec["limit"] = max(0, active - self.counters[name])
        return spec

    def phase(self, spec_of: Callable[[str], dict], names: Iterable[str]) -> dict:
        """One measurement of each stream `names` at once (its job:
        `spec_of(name)`); returns each stream's LOAD_FIGURES."""
        results: dict[str, dict] = {}

        def one(name: str) -> None:
            results[name] = load(self.load_cpu, spec_of(name))
            self.counters[name] = results[name]["next"]
            for status, count in results[name]["statuses"].items():
                self.sent[name][status] = self.sent[name].get(status, 0) + count

        threads = [threading.Thread(target=one, args=(name,)) for name in names]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return {name: {f: r[f] for f in LOAD_FIGURES} for name, r in results.items()}


def load_rows(phase_name: str, figures: dict) -> list[str]:
    """A phase's streams as rows under LOAD_HEADER."""
    rows = []
    for stream, r in figures.items():
        answers = ", ".join(f"{k}: {v}" for k, v in sorted(r["statuses"].items()))
        rows.append(
            f"{phase_name:<12} {stream:<6} {r['requests']:>8} {r['p50_ms']!s:>8} "
            f"{r['p99_ms']!s:>9}  {answers}"
        )
    return rows


# --- what the fault runs count after (faults.py, hosts.py) ----------------------------

PENDING_SQL = """
SELECT (SELECT count(*) FROM notifications_nudgedelivery
        WHERE status NOT IN ('delivered', 'failed'))
     + (SELECT count(*) FROM webhooks_webhookdelivery WHERE status NOT IN ('delivered', 'failed'))
     + (SELECT count(*) FROM commitments_outboxevent WHERE dispatched_at IS NULL)
"""


def drain(url: str, timeout: float) -> float:
    """Wait until no outbox event is undispatched and no delivery is pending."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                if fetch_row(conn, PENDING_SQL)[0] == 0:
                    break
        except psycopg.Error:
            pass
        time.sleep(1)
    return round(time.monotonic() - start, 1)


# What the checks count, by name (a pair where two figures come of one query).
CHECK_COUNTS = {
    "inbox_commitments": "SELECT count(*), count(DISTINCT (assigner_id, external_system, "
    "external_id)) FROM commitments_commitment WHERE external_id LIKE 'load-%' "
    "OR external_id LIKE 'probe-%'",
    "inbox_without_audit": "SELECT count(*) FROM commitments_commitment c WHERE "
    "(c.external_id LIKE 'load-%' OR c.external_id LIKE 'probe-%') AND NOT EXISTS "
    "(SELECT 1 FROM audit_auditevent a WHERE a.subject_id = c.id)",
    "inbox_audit_rows": "SELECT count(*) FROM audit_auditevent a JOIN commitments_commitment c"
    " ON a.subject_id = c.id WHERE c.external_id LIKE 'load-%' OR c.external_id LIKE "
    "'probe-%'",
    "inbox_without_nudge_delivered": "SELECT count(*) FROM commitments_commitment c WHERE "
    "(c.external_id LIKE 'load-%' OR c.external_id LIKE 'probe-%') AND NOT EXISTS "
    "(SELECT 1 FROM notifications_nudgedelivery d JOIN commitments_outboxevent e "
    "ON d.event_id = e.id WHERE e.commitment_id = c.id AND d.status = 'delivered')",
    "nudges_delivered": "SELECT count(*) FROM notifications_nudgedelivery WHERE status = "
    "'delivered'",
    "completed": "SELECT count(*) FROM commitments_commitment WHERE status = 'Completed'",
    "completed_without_webhook_delivered": "SELECT count(*) FROM commitments_commitment c "
    "WHERE c.status = 'Completed' AND NOT EXISTS (SELECT 1 FROM webhooks_webhookdelivery w "
    "WHERE w.commitment_id = c.id AND w.status = 'delivered')",
    "webhooks_delivered": "SELECT count(*) FROM webhooks_webhookdelivery WHERE status = "
    "'delivered'",
    "webhook_deliveries_retried": "SELECT count(*) FROM webhooks_webhookdelivery WHERE "
    "attempts > 1",
    "nudge_deliveries_retried": "SELECT count(*) FROM notifications_nudgedelivery WHERE "
    "attempts > 1",
    "deliveries_not_done": "SELECT (SELECT count(*) FROM notifications_nudgedelivery WHERE "
    "status <> 'delivered') + (SELECT count(*) FROM webhooks_webhookdelivery WHERE status <> "
    "'delivered')",
    "events_undispatched": "SELECT count(*) FROM commitments_outboxevent WHERE dispatched_at"
    " IS NULL",
}


def counted(conn: psycopg.Connection, queries: dict[str, str]) -> dict:
    """Each query's figure by name (a pair where the query gives two)."""
    found: dict = {}
    for key, sql in queries.items():
        row = fetch_row(conn, sql)
        found[key] = row[0] if len(row) == 1 else list(row)
    return found


def against_answers(found: dict, accepted: int, synced: int) -> None:
    """The inbox commitments found (CHECK_COUNTS' pair) beside the inbox
    calls answered 201 (`accepted`) and the syncs answered 200 (`synced`)."""
    rows, distinct = found.pop("inbox_commitments")
    found.update(
        {
            "inbox_accepted_201": accepted,
            "inbox_commitments_found": rows,
            "inbox_duplicates": rows - distinct,
            "sync_completed_200": synced,
        }
    )


def shortfalls(found: dict) -> int:
    """What both fault runs count as lost: answered work the database or the
    receivers do not show, and work left undone after the drain."""
    return (
        max(0, found["inbox_accepted_201"] - found["inbox_commitments_found"])
        + found["inbox_without_audit"]
        + found["inbox_without_nudge_delivered"]
        + max(0, found["sync_completed_200"] - found["completed"])
        + found["completed_without_webhook_delivered"]
        + max(0, found["webhooks_delivered"] - found["webhook_ids_received_distinct"])
        + found["deliveries_not_done"]
        + found["events_undispatched"]
    )
