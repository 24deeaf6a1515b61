"""What the benchmark (run.py), the fault run (faults.py) and the per-call
profile (callcost.py) share: the service's processes and environment, its
database, the stage (fixtures.py), the calls they make and the load that
makes them.

The entry scripts run as modules from the repository's root
(`python -m benchmarks.run`), like manage.py's commands: every import, this
package's, the apps' and the tests' harness (the fake model provider), is a
plain one. `reexec_as_module` keeps `python benchmarks/run.py` working.
"""

from __future__ import annotations

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
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

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


def bare_gunicorn_command(workers: int) -> list[str]:
    """The bare floor's server (benchmarks/bare/): the same interpreter and
    gunicorn settings, less the service's access log."""
    return [
        *(PYTHON, "-m", "gunicorn", "benchmarks.bare.wsgi:application"),
        *("--config", "python:benchmarks.bare.gunicorn", "--workers", str(workers)),
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
    env: dict[str, str], *, active: int, completed: int, receiver_url: str, gather: bool = False
) -> dict:
    """The stage in the service's database (benchmarks/fixtures.py): users, a
    token, the webhook endpoint at `receiver_url`, commitments to complete and
    to replay. Returns what fixtures.py printed (the token, the captured
    inbox statements, ...)."""
    out = run_checked(
        [
            *(PYTHON, "-m", "benchmarks.fixtures"),
            *("--active", str(active), "--completed", str(completed)),
            *("--receiver", receiver_url),
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
