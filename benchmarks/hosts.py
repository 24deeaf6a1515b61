"""Several hosts, nothing lost: the service spread over network namespaces as
hosts, hosts killed and cut off under load, then counts.

    sudo .venv/bin/python -m benchmarks.hosts             # ~4 min
    sudo .venv/bin/python -m benchmarks.hosts --phase-seconds 12 --rate 3

As root (it makes network namespaces). Every host is a network namespace
`cmh-<name>` with one veth to the bridge `cmh0` and an address in
10.231.0.0/24 (the bridge's own, 10.231.0.1, is this script's: the load, the
webhook receiver and the SMTP sink); no route leads out. Hosts:

- db (10.231.0.2): PgBouncer in transaction mode on :6432 in front of the
  machine's PostgreSQL (reached on its Unix socket, the file system being
  shared), PostgreSQL itself on :5432 for the relays' LISTEN (socat to that
  socket: "directly", DATABASE_LISTEN_URL), and a redis-server of the run's;
- lb (10.231.0.3): HAProxy on :80, health-checking /readyz on both web hosts;
- web1, web2 (.11, .12): gunicorn with config/gunicorn.py on :8000;
- worker1, worker2 (.21, .22): `manage.py run_worker --no-beat` (the default
  queue's worker with its outbox relay, and the webhooks' worker), plus a
  socat from the host's 127.0.0.1 to the receiver, so the stored webhook URL
  is a loopback one the outbound guard allows (it refuses private addresses);
- beat (.31): `celery -A config beat`.

Under steady open-loop inbox and sync load (benchmarks/load.py, through the
balancer) it kills web1 (every process of the host, SIGKILL), then worker1
while a webhook send of its is in flight, then takes worker2's link down for
--cut-seconds, then kills the beat host and starts beat on worker1; drains,
counts, prints a table, writes var/hosts/latest.json and exits 1 when
anything was lost. Clean-up (namespaces, bridge, processes) runs on exit, on
failure and on SIGTERM, and at the start for what a killed run left. See
docs/production.md, "Several hosts".
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

if __name__ == "__main__" and not __package__:
    from harness import reexec_as_module  # type: ignore[import-not-found]

    reexec_as_module("benchmarks.hosts")

import psycopg
import redis

from benchmarks.harness import (
    CHECK_COUNTS,
    ENDPOINTS,
    LOAD_HEADER,
    PYTHON,
    ROOT,
    Redis,
    Streams,
    against_answers,
    counted,
    drain,
    fetch_row,
    fresh_database,
    gunicorn_command,
    load_rows,
    log,
    machine,
    make_stage,
    now_iso,
    run_checked,
    service_env,
    shortfalls,
    spawn,
    with_database,
    write_results,
)
from benchmarks.receiver import Receiver
from tests.harness.smtp import SmtpSink

PREFIX = "cmh-"
BRIDGE = "cmh0"
NET = "10.231.0"
GATEWAY = f"{NET}.1"
ADDRESSES = {"db": 2, "lb": 3, "web1": 11, "web2": 12, "worker1": 21, "worker2": 22, "beat": 31}
WEB_PORT, LB_PORT, PGBOUNCER_PORT, PG_PORT = 8000, 80, 6432, 5432
# Debian package of each program the run needs.
PACKAGES = {
    "haproxy": "haproxy",
    "pgbouncer": "pgbouncer",
    "socat": "socat",
    "redis-server": "redis-server",
    "psql": "postgresql-client",
    "taskset": "util-linux",
}


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=60)  # noqa: S603
    if check and done.returncode:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr.strip()}")
    return done


def install_missing() -> None:
    """apt-get install what is missing (as root), or say what to install."""
    missing = sorted({pkg for tool, pkg in PACKAGES.items() if not shutil.which(tool)})
    if not missing:
        return
    log(f"installing {', '.join(missing)} (apt-get)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    done = subprocess.run(  # noqa: S603
        ["apt-get", "install", "-y", "--no-install-recommends", *missing],  # noqa: S607
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"Could not install {' '.join(missing)}; run: apt-get install -y {' '.join(missing)}"
            f"\n{done.stderr[-1500:]}"
        )


def remove_stale() -> int:
    """Namespaces and the bridge a run left (one killed before its clean-up):
    every process of each namespace killed, the namespace deleted (its veth
    with it), then the bridge. Returns how many namespaces were removed."""
    names = [
        line.split()[0] for line in sh("ip", "netns", "list").stdout.splitlines() if line.strip()
    ]
    stale = [n for n in names if n.startswith(PREFIX)]
    for name in stale:
        kill_namespace(name)
        sh("ip", "netns", "delete", name, check=False)
    # A veth outlives its namespace's name while orphaned TCP sockets in it
    # still retransmit: deleted by name, so the next run can make its own.
    for line in sh("ip", "-o", "link", "show").stdout.splitlines():
        link = line.split(":")[1].strip().split("@")[0]
        if link.startswith("cmhv-") or link == BRIDGE:
            sh("ip", "link", "delete", link, check=False)
    return len(stale)


def namespace_pids(name: str) -> list[int]:
    out = sh("ip", "netns", "pids", name, check=False).stdout
    return [int(p) for p in out.split()]


def kill_namespace(name: str) -> int:
    """SIGKILL every process in the namespace, until none is left."""
    killed: set[int] = set()
    for _ in range(50):
        pids = namespace_pids(name)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        time.sleep(0.1)
    return len(killed)


class Host:
    """A network namespace on the bridge, and the processes started in it."""

    def __init__(self, name: str, folder: Path) -> None:
        self.name = name
        self.ns = PREFIX + name
        self.veth = f"cmhv-{name}"  # the bridge's end (at most 15 characters)
        self.address = f"{NET}.{ADDRESSES[name]}"
        self.folder = folder / name
        self.folder.mkdir(parents=True, exist_ok=True)
        self.procs: dict[str, subprocess.Popen] = {}

    def create(self) -> None:
        sh("ip", "netns", "add", self.ns)
        sh("ip", "link", "add", self.veth, "type", "veth", "peer", "name", "eth0", "netns", self.ns)
        sh("ip", "link", "set", self.veth, "master", BRIDGE, "up")
        sh("ip", "-n", self.ns, "addr", "add", f"{self.address}/24", "dev", "eth0")
        sh("ip", "-n", self.ns, "link", "set", "eth0", "up")
        sh("ip", "-n", self.ns, "link", "set", "lo", "up")

    def prefix(self, user: str | None = None) -> tuple[str, ...]:
        """The command before a program of this host: its network namespace,
        and a UTS namespace with the host's name, as a real host has (a
        Celery worker is `celery@<hostname>`, and readiness counts live
        consumers by that name: two hosts named alike would count as one)."""
        runas = ("runuser", "-u", user, "--") if user else ()
        named = ("unshare", "--uts", "--", "/bin/sh", "-c", 'hostname "$0" && exec "$@"', self.name)
        return ("ip", "netns", "exec", self.ns, *named, *runas)

    def log_count(self, label: str, text: str) -> int:
        path = self.folder / f"{label}.log"
        return path.read_text(errors="replace").count(text) if path.exists() else 0

    def wait_ready(self, starts: int, timeout: float = 180) -> float | None:
        """Seconds until both Celery workers of the host's `starts`-th start
        said they are ready (their log), or None."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            ready = [
                self.log_count("worker", f"{w}@{self.name} ready.") for w in ("celery", "webhooks")
            ]
            if min(ready) >= starts:
                return round(time.monotonic() - t0, 1)
            time.sleep(0.5)
        return None

    def start(
        self, label: str, argv: list[str], env: dict[str, str] | None = None, user: str = ""
    ) -> subprocess.Popen:
        proc = spawn([*self.prefix(user or None), *argv], self.folder / f"{label}.log", env)
        self.procs[label] = proc
        return proc

    def kill(self) -> int:
        """Every process of the host, SIGKILL (a host that lost power)."""
        killed = kill_namespace(self.ns)
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        self.procs.clear()
        return killed

    def link(self, up: bool) -> None:
        """The bridge's end of the host's cable: down cuts it off, addresses
        and connections kept (TCP retransmits until the link is back)."""
        sh("ip", "link", "set", self.veth, "up" if up else "down")

    def remove(self) -> None:
        kill_namespace(self.ns)
        sh("ip", "link", "delete", self.veth, check=False)
        sh("ip", "netns", "delete", self.ns, check=False)


# --- the hosts' programs ---------------------------------------------------------------


PGBOUNCER_INI = """\
[databases]
{db} = host={socket_dir} port={pg_port} dbname={db}

[pgbouncer]
listen_addr = {address}
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {folder}/users.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = 20
max_client_conn = 500
server_reset_query =
ignore_startup_parameters = extra_float_digits
"""

HAPROXY_CFG = """\
global
    maxconn 2000
    stats socket {folder}/haproxy.sock mode 600 level admin

defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    retries 2
    option redispatch
    option forwardfor

frontend api
    bind {address}:{port}
    # TLS ends here in production; the run's load is plain HTTP on the bridge.
    http-request set-header X-Forwarded-Proto https
    default_backend web

backend web
    balance roundrobin
    option httpchk
    http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host balancer
    http-check expect status 200
    default-server inter 1s fall 2 rise 2
{servers}
"""


def postgres_socket(url: str) -> tuple[str, int]:
    """The machine's PostgreSQL's Unix socket folder and port."""
    with psycopg.connect(with_database(url, "postgres"), autocommit=True) as conn:
        folder = str(fetch_row(conn, "SHOW unix_socket_directories")[0]).split(",")[0].strip()
        port = int(fetch_row(conn, "SHOW port")[0])
    if not Path(folder, f".s.PGSQL.{port}").exists():
        raise SystemExit(
            f"PostgreSQL's socket {folder}/.s.PGSQL.{port} is not on this machine: the db host "
            "reaches PostgreSQL through it."
        )
    return folder, port


def haproxy_states(sock_path: Path) -> dict[str, str]:
    """`show stat` on HAProxy's socket: each web server's status (UP, DOWN, ...)."""
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(2)
            sock.connect(str(sock_path))
            sock.sendall(b"show stat\n")
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
    except OSError:
        return {}
    states = {}
    for line in data.decode(errors="replace").splitlines():
        cells = line.split(",")
        if len(cells) > 17 and cells[0] == "web" and cells[1] not in ("FRONTEND", "BACKEND"):
            states[cells[1]] = cells[17].split()[0]
    return states


# --- watching: leases, the balancer --------------------------------------------------------


LEASES_SQL = """
SELECT 'nudge', id::text, claimed_until, now() FROM notifications_nudgedelivery
WHERE status = 'sending'
UNION ALL
SELECT 'webhook', id::text, claimed_until, now() FROM webhooks_webhookdelivery
WHERE status = 'sending'
"""


class Watcher(threading.Thread):
    """Every 0.5 s: each claim in the database (a row `sending`, its lease's
    end), and HAProxy's view of the web hosts. A claim seen after its lease
    ran out is one whose worker died or was cut off and nobody took over
    yet; `overdue` keeps, per claim, how long after its expiry it was last
    seen."""

    def __init__(self, url: str, haproxy_sock: Path, redis_url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.sock = url, haproxy_sock
        self.redis = redis.Redis.from_url(redis_url, socket_timeout=2)
        self.queues: list[tuple[float, int, int]] = []  # (monotonic, celery, webhooks) lengths
        self.stop_event = threading.Event()
        self.overdue: dict[tuple, float] = {}  # (kind, id, claimed_until): seconds past it
        self.claims_seen: set[tuple] = set()
        self.balancer: list[tuple[float, dict[str, str]]] = []  # (monotonic, states) changes
        self.t0 = time.monotonic()

    def run(self) -> None:
        conn = None
        while not self.stop_event.is_set():
            try:
                if conn is None:
                    conn = psycopg.connect(self.url, autocommit=True, connect_timeout=3)
                for kind, pk, until, now in conn.execute(LEASES_SQL).fetchall():
                    key = (kind, pk, until)
                    self.claims_seen.add(key)
                    past = (now - until).total_seconds()
                    if past > 0:
                        self.overdue[key] = max(self.overdue.get(key, 0.0), past)
            except psycopg.Error:
                conn = None
            with contextlib.suppress(redis.RedisError):
                celery, webhooks = (int(self.redis.llen(q)) for q in ("celery", "webhooks"))
                self.queues.append((time.monotonic(), celery, webhooks))
            states = haproxy_states(self.sock)
            if states and (not self.balancer or self.balancer[-1][1] != states):
                self.balancer.append((time.monotonic(), states))
            self.stop_event.wait(0.5)
        if conn is not None:
            conn.close()

    def queue_max(self, since: float) -> dict[str, int]:
        """The longest the broker's queues were since `since` (messages waiting)."""
        rows = [r for r in self.queues if r[0] >= since]
        return {
            "celery": max((r[1] for r in rows), default=0),
            "webhooks": max((r[2] for r in rows), default=0),
        }

    def state_of(self, server: str) -> str:
        return self.balancer[-1][1].get(server, "?") if self.balancer else "?"

    def wait_for(self, server: str, state: str, timeout: float) -> float | None:
        """Seconds until HAProxy says `server` is `state`, or None."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.state_of(server) == state:
                return round(time.monotonic() - t0, 1)
            time.sleep(0.2)
        return None


# --- the run ---------------------------------------------------------------------------------


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.folder = Path(tempfile.mkdtemp(prefix="hosts-"))
        self.folder.chmod(0o755)  # the db host's programs run as postgres
        self.hosts = {name: Host(name, self.folder) for name in ADDRESSES}
        self.receiver: Receiver | None = None
        self.sink: SmtpSink | None = None
        self.redis: Redis | None = None
        self.watcher: Watcher | None = None
        self.direct_url = args.database_url
        self.env: dict[str, str] = {}
        self.stage_env: dict[str, str] = {}
        self.ctx: dict = {}
        self.streams = Streams(args.load_cpu, ("inbox", "sync"))
        self.phases: dict[str, dict] = {}
        self.beat_host = "beat"
        self.results: dict = {
            "date": now_iso(),
            "machine": machine(),
            "settings": {
                k: getattr(args, k) for k in ("rate", "phase_seconds", "cut_seconds", "web_workers")
            },
        }

    # The network and the data host.

    def network(self) -> None:
        stale = remove_stale()
        if stale:
            log(f"removed {stale} namespace(s) a killed run left")
        sh("ip", "link", "add", BRIDGE, "type", "bridge")
        sh("ip", "addr", "add", f"{GATEWAY}/24", "dev", BRIDGE)
        sh("ip", "link", "set", BRIDGE, "up")
        for host in self.hosts.values():
            host.create()
        log(
            f"{len(self.hosts)} hosts on {BRIDGE} ({NET}.0/24): "
            + ", ".join(f"{h.name} {h.address}" for h in self.hosts.values())
        )

    def data_host(self) -> None:
        """PgBouncer (transaction mode), PostgreSQL directly (socat), Redis."""
        db = self.hosts["db"]
        socket_dir, pg_port = postgres_socket(self.direct_url)
        name = urlsplit(self.direct_url).path.lstrip("/")
        shutil.chown(db.folder, "postgres", "postgres")
        (db.folder / "users.txt").write_text('"postgres" ""\n')
        ini = PGBOUNCER_INI.format(
            db=name,
            socket_dir=socket_dir,
            pg_port=pg_port,
            address=db.address,
            port=PGBOUNCER_PORT,
            folder=db.folder,
        )
        (db.folder / "pgbouncer.ini").write_text(ini)
        for path in db.folder.iterdir():
            shutil.chown(path, "postgres", "postgres")
        pgbouncer = shutil.which("pgbouncer") or "pgbouncer"
        db.start("pgbouncer", [pgbouncer, str(db.folder / "pgbouncer.ini")], user="postgres")
        socat = shutil.which("socat") or "socat"
        listen = f"TCP-LISTEN:{PG_PORT},bind={db.address},fork,reuseaddr"
        db.start(
            "postgres-direct",
            [socat, listen, f"UNIX-CONNECT:{socket_dir}/.s.PGSQL.{pg_port}"],
            user="postgres",
        )
        self.redis = Redis(db.folder, host=db.address, prefix=db.prefix())
        self.redis.start()
        self.pooled_url = f"postgres://postgres@{db.address}:{PGBOUNCER_PORT}/{name}"
        self.listen_url = f"postgres://postgres@{db.address}:{PG_PORT}/{name}"
        log(
            f"db host: PgBouncer :{PGBOUNCER_PORT} (transaction), PostgreSQL :{PG_PORT}, "
            f"Redis :{self.redis.port}"
        )

    def environment(self) -> None:
        """One environment for every host (the same secrets), its own VAR_DIR each."""
        assert self.redis is not None and self.sink is not None
        self.env = service_env(
            self.pooled_url, self.redis.url, self.folder, "benchmarks.hosts_settings"
        )
        self.env.update(
            {
                "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "EMAIL_HOST": GATEWAY,
                "EMAIL_PORT": str(self.sink.port),
                "EMAIL_TIMEOUT": "5",
                "DB_DISABLE_SERVER_SIDE_CURSORS": "1",
                # Debian's PgBouncer (1.18) keeps no prepared statement in
                # transaction mode.
                "DB_PREPARED_STATEMENTS": "0",
                "DATABASE_LISTEN_URL": self.listen_url,
                "TRUST_X_FORWARDED_PROTO": "1",
                "TRUSTED_PROXY_COUNT": "1",
                "TRUSTED_PROXY_NETWORKS": f"{self.hosts['lb'].address}/32",
                "LOG_JSON": "1",
            }
        )
        # The stage and the checks: from this machine, PostgreSQL directly.
        self.stage_env = dict(self.env, DATABASE_URL=self.direct_url, DATABASE_LISTEN_URL="")

    def host_env(self, host: Host) -> dict[str, str]:
        return dict(self.env, VAR_DIR=str(host.folder / "var"))

    def the_stage(self) -> None:
        log("database: fresh, migrated (directly, not through the pooler)")
        fresh_database(self.direct_url, self.stage_env)
        args = self.args
        total = int(args.rate * args.phase_seconds * (len(PHASES) + 2) * 1.2 + 50)
        assert self.receiver is not None
        # The URL the worker hosts post to: their own loopback, forwarded.
        hook = f"http://127.0.0.1:{self.receiver.server.server_port}/hook"
        self.ctx = make_stage(self.stage_env, active=total, completed=0, receiver_url=hook)
        self.ctx["sync_active"] = total
        self.reminders("before")
        # The service's two ways to the database, from a host's address.
        wait_for(lambda: psycopg.connect(self.pooled_url, connect_timeout=2).close(), "PgBouncer")
        wait_for(lambda: psycopg.connect(self.listen_url, connect_timeout=2).close(), "PostgreSQL")

    def reminders(self, batch: str) -> None:
        """--reminders Active commitments due in 12 h, each of its own assignee
        (one reminder each, no digest), for the next reminders run."""
        code = REMINDER_FIXTURE % {"n": self.args.reminders, "batch": batch}
        run_checked([PYTHON, "manage.py", "shell", "-c", code], self.stage_env)

    # The service.

    def start_web(self, host: Host) -> None:
        env = dict(self.host_env(host), PORT=str(WEB_PORT))
        host.start("gunicorn", gunicorn_command(self.args.web_workers), env)

    def start_worker(self, host: Host) -> None:
        port = self.receiver.server.server_port if self.receiver else 0
        host.start(
            "receiver-forward",
            [
                shutil.which("socat") or "socat",
                f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr",
                f"TCP:{GATEWAY}:{port}",
            ],
        )
        worker = [PYTHON, "manage.py", "run_worker", "--no-beat", "--loglevel=INFO"]
        host.start("worker", worker, self.host_env(host))

    def start_beat(self, host: Host) -> None:
        schedule = host.folder / "var" / "celerybeat-schedule"
        schedule.parent.mkdir(parents=True, exist_ok=True)
        beat = [
            PYTHON,
            "-m",
            "celery",
            "-A",
            "config",
            "beat",
            f"--schedule={schedule}",
            "--loglevel=DEBUG",
        ]
        host.start("beat", beat, self.host_env(host))

    def start_balancer(self) -> None:
        lb = self.hosts["lb"]
        servers = "\n".join(
            f"    server {n} {self.hosts[n].address}:{WEB_PORT} check" for n in ("web1", "web2")
        )
        cfg = HAPROXY_CFG.format(
            folder=lb.folder, address=lb.address, port=LB_PORT, servers=servers
        )
        (lb.folder / "haproxy.cfg").write_text(cfg)
        haproxy = shutil.which("haproxy") or "haproxy"
        lb.start("haproxy", [haproxy, "-db", "-f", str(lb.folder / "haproxy.cfg")])

    def the_service(self) -> None:
        log(
            f"service: web1, web2 (gunicorn, {self.args.web_workers} workers each), worker1, "
            "worker2 (run_worker --no-beat), beat, HAProxy"
        )
        for name in ("worker1", "worker2"):
            self.start_worker(self.hosts[name])
        for name in ("web1", "web2"):
            self.start_web(self.hosts[name])
        self.start_beat(self.hosts["beat"])
        self.start_balancer()
        assert self.redis is not None
        self.watcher = Watcher(
            self.direct_url, self.hosts["lb"].folder / "haproxy.sock", self.redis.url
        )
        self.watcher.start()
        for name in ("worker1", "worker2"):
            if self.hosts[name].wait_ready(1) is None:
                raise SystemExit(f"The workers of {name} never said they were ready: {self.folder}")
        for name in ("web1", "web2"):
            if self.watcher.wait_for(name, "UP", 180) is None:
                raise SystemExit(f"HAProxy never saw {name} ready (/readyz): see {self.folder}")
        log("both web hosts ready behind the balancer")

    # The load.

    def load_phase(self, seconds: float) -> dict:
        """Open-loop inbox and sync load through the balancer, at --rate each."""
        return self.streams.phase(lambda name: self.stream_spec(name, seconds), ("inbox", "sync"))

    def stream_spec(self, name: str, seconds: float) -> dict:
        return self.streams.spec(
            name,
            ENDPOINTS[name],
            token=self.ctx["token"],
            host=self.hosts["lb"].address,
            port=LB_PORT,
            seconds=seconds,
            rate=self.args.rate,
            active=self.ctx["sync_active"] if name == "sync" else None,
        )

    def phase(self, name: str, seconds: float, fault=None) -> None:
        log(f"{name}: {seconds:.0f} s of load" + (", the fault in it" if fault else ""))
        phase: dict = {}
        t0 = time.monotonic()
        thread = threading.Thread(target=fault, args=(phase,)) if fault else None
        if thread:
            thread.start()
        phase["load"] = self.load_phase(seconds)
        if thread:
            thread.join()
        if self.watcher:
            phase["queued_max"] = self.watcher.queue_max(t0)
        self.phases[name] = phase

    # Counting.

    def listen_sessions(self) -> int:
        """Sessions LISTENing on PostgreSQL: one relay per live worker host."""
        with psycopg.connect(self.direct_url, autocommit=True) as conn:
            return int(fetch_row(conn, LISTENERS_SQL)[0])

    def pgbouncer(self, command: str) -> list[list[str]]:
        db = self.hosts["db"]
        out = sh(
            "psql",
            "-h",
            db.address,
            "-p",
            str(PGBOUNCER_PORT),
            "-U",
            "postgres",
            "-d",
            "pgbouncer",
            "-AtF",
            "|",
            "-c",
            command,
            check=False,
        ).stdout
        return [line.split("|") for line in out.splitlines() if line]

    def pool_figures(self) -> dict:
        name = urlsplit(self.direct_url).path.lstrip("/")
        rows = {r[0]: r for r in self.pgbouncer("SHOW POOLS")}
        stats = {r[0]: r for r in self.pgbouncer("SHOW STATS")}
        mode = [r[1] for r in self.pgbouncer("SHOW CONFIG") if r and r[0] == "pool_mode"]
        pool, stat = rows.get(name), stats.get(name)
        return {
            "pool_mode": mode[0] if mode else "?",
            # SHOW POOLS: database, user, cl_active, cl_waiting, ..., sv_active, sv_idle, ...
            "client_connections": int(pool[2]) + int(pool[3]) if pool else None,
            "server_connections": sum(int(x) for x in pool[6:9]) if pool else None,
            "transactions": int(stat[1]) if stat else None,
        }

    def stop(self) -> None:
        if self.watcher:
            self.watcher.stop_event.set()
        for host in self.hosts.values():
            host.remove()
        sh("ip", "link", "delete", BRIDGE, check=False)
        if self.receiver:
            self.receiver.server.shutdown()
        if self.sink:
            self.sink.stop()
        if self.args.keep:
            log(f"logs kept in {self.folder}")
        else:
            shutil.rmtree(self.folder, ignore_errors=True)


def wait_for(attempt, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            attempt()
            return
        except Exception as error:
            if time.monotonic() > deadline:
                raise SystemExit(f"{what} did not answer: {error}") from error
            time.sleep(0.3)


# --- the faults, in order ------------------------------------------------------------------


def steady(run: Run) -> None:
    """Load, no fault: the reference, and the relays' LISTEN sessions counted."""
    run.phase("steady", run.args.phase_seconds)
    run.phases["steady"]["listen_sessions"] = run.listen_sessions()
    run.phases["steady"]["pgbouncer"] = run.pool_figures()


def web_host_killed(run: Run) -> None:
    """A quarter in, web1 loses every process (SIGKILL); HAProxy's /readyz
    check takes it out; three quarters in it starts again and is taken back."""
    web1, watcher, seconds = run.hosts["web1"], run.watcher, run.args.phase_seconds
    assert watcher is not None

    def fault(phase: dict) -> None:
        time.sleep(seconds / 4)
        phase["processes_killed"] = web1.kill()
        phase["balancer_out_after_s"] = watcher.wait_for("web1", "DOWN", 30)
        time.sleep(max(0.0, seconds / 2 - (phase["balancer_out_after_s"] or 0)))
        run.start_web(web1)
        phase["balancer_back_after_start_s"] = watcher.wait_for("web1", "UP", 120)

    run.phase("web_kill", seconds, fault)


def worker_host_killed(run: Run) -> None:
    """The receiver answers 1 s late; once a webhook POST from worker1 is in
    flight, every process of worker1 gets SIGKILL (the sends it claimed keep
    their lease until it runs out); 5 s later the host starts again."""
    worker1, receiver, seconds = run.hosts["worker1"], run.receiver, run.args.phase_seconds
    assert receiver is not None

    def fault(phase: dict) -> None:
        receiver.delay = 1.0
        time.sleep(seconds / 4)
        deadline = time.monotonic() + 30
        while receiver.in_flight_from.get(worker1.address, 0) == 0:
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        phase["webhook_posts_in_flight_from_it"] = receiver.in_flight_from.get(worker1.address, 0)
        with psycopg.connect(run.direct_url, autocommit=True) as conn:
            phase["claims_at_kill"] = len(conn.execute(LEASES_SQL).fetchall())
        phase["processes_killed"] = worker1.kill()
        time.sleep(2)
        receiver.delay = 0.0
        time.sleep(3)
        run.start_worker(worker1)

    run.phase("worker_kill", seconds + 5, fault)


def worker_host_cut_off(run: Run) -> None:
    """worker2's link down for --cut-seconds (its processes run on, reaching
    nothing), then up again."""
    worker2, cut = run.hosts["worker2"], run.args.cut_seconds

    def fault(phase: dict) -> None:
        # One fault at a time: worker1, killed before, serves again first.
        phase["worker1_ready_after_s"] = run.hosts["worker1"].wait_ready(2)
        time.sleep(3)
        t0 = time.monotonic()
        worker2.link(up=False)
        time.sleep(cut)
        worker2.link(up=True)
        phase["link_down_s"] = round(time.monotonic() - t0, 1)

    run.phase("partition", cut + 10, fault)


def beat_host_killed(run: Run) -> None:
    """A quarter in, the beat host loses every process; 2 s later beat starts
    on worker1; then the second batch of reminders is made, for the new
    beat to find."""
    beat, worker1, seconds = run.hosts["beat"], run.hosts["worker1"], run.args.phase_seconds

    def fault(phase: dict) -> None:
        time.sleep(seconds / 4)
        phase["processes_killed"] = beat.kill()
        time.sleep(2)
        run.start_beat(worker1)
        run.beat_host = "worker1"
        run.reminders("after")
        phase["beat_now_on"] = "worker1"

    run.phase("beat_move", seconds, fault)


PHASES = (steady, web_host_killed, worker_host_killed, worker_host_cut_off, beat_host_killed)


# --- the checks ----------------------------------------------------------------------------

# A relay's listening session last ran its LISTEN or, since migration
# commitments 0012, a statement on its row of commitments_outboxwaiter.
LISTENERS_SQL = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
    "AND pid <> pg_backend_pid() "
    "AND (query ILIKE 'LISTEN %' OR query ILIKE '%commitments_outboxwaiter%')"
)
# Every delivered nudge's mail: its own Message-ID, or its digest's.
MAILS_DUE = (
    "SELECT coalesce(digest_id, id)::text FROM notifications_nudgedelivery "
    "WHERE status = 'delivered' AND NOT is_digest"
)
WEBHOOKS_DUE = "SELECT id::text FROM webhooks_webhookdelivery WHERE status = 'delivered'"

MORE_COUNTS = {
    "inbox_with_two_nudges_delivered": "SELECT count(*) FROM (SELECT e.commitment_id FROM "
    "notifications_nudgedelivery d JOIN commitments_outboxevent e ON d.event_id = e.id "
    "JOIN commitments_commitment c ON c.id = e.commitment_id WHERE c.external_id LIKE 'load-%' "
    "AND d.status = 'delivered' GROUP BY 1 HAVING count(*) > 1) x",
    "completed_with_two_webhooks": "SELECT count(*) FROM (SELECT w.commitment_id FROM "
    "webhooks_webhookdelivery w WHERE w.status = 'delivered' GROUP BY 1 HAVING count(*) > 1) x",
    "reminder_commitments": "SELECT count(*) FROM commitments_commitment WHERE "
    "external_system = 'remind'",
    "reminder_commitments_without_one_reminder": "SELECT count(*) FROM commitments_commitment c "
    "WHERE c.external_system = 'remind' AND (SELECT count(*) FROM notifications_reminder r "
    "WHERE r.commitment_id = c.id) <> 1",
    "reminders_without_one_delivered": "SELECT count(*) FROM notifications_reminder r JOIN "
    "commitments_commitment c ON c.id = r.commitment_id WHERE c.external_system = 'remind' "
    "AND (SELECT count(*) FROM notifications_nudgedelivery d WHERE d.reminder_id = r.id "
    "AND d.status = 'delivered') <> 1",
    "leases_expired_still_sending": "SELECT (SELECT count(*) FROM notifications_nudgedelivery "
    "WHERE status = 'sending' AND claimed_until < now()) + (SELECT count(*) FROM "
    "webhooks_webhookdelivery WHERE status = 'sending' AND claimed_until < now())",
}
ATTEMPTS_OF = {
    "webhook": "SELECT id::text, attempts FROM webhooks_webhookdelivery WHERE id::text = ANY(%s)",
    "nudge": "SELECT id::text, attempts FROM notifications_nudgedelivery WHERE id::text = ANY(%s)",
}
NUDGE_ID = re.compile(r"<nudge-([0-9a-f-]{36})@")
SENT_BY_BEAT = re.compile(
    r"(relay\.tasks\.sweep|notifications\.tasks\.remind) sent\. id->([0-9a-f-]+)"
)
EXPIRED = re.compile(
    r"Discarding revoked task: (relay\.tasks\.sweep|notifications\.tasks\.remind)\[([0-9a-f-]+)\]"
)
RAN = re.compile(
    r"Task (relay\.tasks\.sweep|notifications\.tasks\.remind)\[([0-9a-f-]+)\] succeeded"
)


def duplicates(ids: list[str]) -> dict[str, int]:
    seen: dict[str, int] = {}
    for i in ids:
        seen[i] = seen.get(i, 0) + 1
    return {i: n for i, n in seen.items() if n > 1}


def unaccounted(conn: psycopg.Connection, kind: str, dups: dict[str, int]) -> int:
    """Duplicate sends not explained as a retried delivery with the same id
    (the delivery made as many attempts as copies arrived, or more)."""
    if not dups:
        return 0
    attempts: dict[str, int] = dict(conn.execute(ATTEMPTS_OF[kind], [list(dups)]).fetchall())
    return sum(1 for i, n in dups.items() if attempts.get(i, 0) < n)


def scheduled_runs(folder: Path) -> dict:
    """From the logs: each sweep and reminders run beat sent (its task id)
    and how often a worker ran it."""
    sent: dict[str, str] = {}
    ran: dict[str, int] = {}
    expired: set[str] = set()
    for path in folder.glob("*/beat.log"):
        for task, tid in SENT_BY_BEAT.findall(path.read_text(errors="replace")):
            sent[tid] = f"{task}@{path.parent.name}"
    for path in folder.glob("*/worker.log"):
        text = path.read_text(errors="replace")
        for _task, tid in RAN.findall(text):
            ran[tid] = ran.get(tid, 0) + 1
        expired.update(tid for _task, tid in EXPIRED.findall(text))
    out: dict = {}
    for task, short in (
        ("relay.tasks.sweep", "sweeps"),
        ("notifications.tasks.remind", "reminders"),
    ):
        ids = [i for i, t in sent.items() if t.startswith(task)]
        by_host: dict[str, int] = {}
        for i in ids:
            host = sent[i].split("@")[1]
            by_host[host] = by_host.get(host, 0) + 1
        out[short] = {
            "sent_by_beat": by_host,
            "ran": sum(1 for i in ids if ran.get(i)),
            "ran_twice": sum(1 for i in ids if ran.get(i, 0) > 1),
            # Queued while the workers were busy or away: stale once the next is due.
            "expired_unrun": sum(1 for i in ids if not ran.get(i) and i in expired),
            "not_run": sum(1 for i in ids if not ran.get(i) and i not in expired),
        }
    return out


def checks(run: Run) -> dict:
    assert run.receiver is not None and run.sink is not None and run.watcher is not None
    with psycopg.connect(run.direct_url, autocommit=True) as conn:
        found = counted(conn, {**CHECK_COUNTS, **MORE_COUNTS})
        mail_ids = [m for m in (NUDGE_ID.search(x.message_id) for x in run.sink.messages) if m]
        mail_dups = duplicates([m.group(1) for m in mail_ids])
        hook_dups = duplicates(run.receiver.ids)
        found["mail_duplicates_unaccounted"] = unaccounted(conn, "nudge", mail_dups)
        found["webhook_duplicates_unaccounted"] = unaccounted(conn, "webhook", hook_dups)
        found["listen_sessions_at_end"] = int(fetch_row(conn, LISTENERS_SQL)[0])
        mailed = {m.group(1) for m in mail_ids}
        found["nudges_delivered_no_mail_at_sink"] = sum(
            1 for (i,) in conn.execute(MAILS_DUE).fetchall() if i not in mailed
        )
        received = set(run.receiver.ids)
        found["webhooks_delivered_not_received"] = sum(
            1 for (i,) in conn.execute(WEBHOOKS_DUE).fetchall() if i not in received
        )
    sent = run.streams.sent
    against_answers(found, sent["inbox"].get("201", 0), sent["sync"].get("200", 0))
    by_host = {h.address: h.name for h in run.hosts.values()}
    found.update(
        {
            "mails_received": len(run.sink.messages),
            "mails_duplicate_copies": sum(n - 1 for n in mail_dups.values()),
            "mails_by_host": count_by(by_host, [m.peer for m in run.sink.messages]),
            "webhook_posts_received": len(run.receiver.ids),
            "webhook_ids_received_distinct": len(set(run.receiver.ids)),
            "webhook_duplicate_copies": sum(n - 1 for n in hook_dups.values()),
            "webhooks_by_host": count_by(by_host, run.receiver.peers),
        }
    )
    overdue = run.watcher.overdue
    found["claims_seen"] = len(run.watcher.claims_seen)
    found["claims_outliving_their_lease"] = len(overdue)
    found["longest_past_lease_s"] = round(max(overdue.values(), default=0.0), 1)
    found["lease_bound_s"] = run.args.lease_bound
    found["scheduled"] = scheduled_runs(run.folder)
    found["lost"] = lost(found, run.args.reminders * 2)
    return found


def count_by(names: dict[str, str], peers: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for peer in peers:
        name = names.get(peer, peer)
        out[name] = out.get(name, 0) + 1
    return out


def lost(found: dict, reminders: int) -> int:
    """Every shortfall (the fault run's, harness.shortfalls, and this run's
    own), duplicate nobody can account for, lease that outlived its bound,
    reminder not made once and sent once, and scheduled run that ran twice or
    not after beat moved: each counts one."""
    scheduled = found["scheduled"]
    moved = sum(
        n for kind in scheduled.values() for h, n in kind["sent_by_beat"].items() if h != "beat"
    )
    return (
        shortfalls(found)
        + found["inbox_duplicates"]
        + found["inbox_with_two_nudges_delivered"]
        + found["completed_with_two_webhooks"]
        + found["nudges_delivered_no_mail_at_sink"]
        + found["webhooks_delivered_not_received"]
        + found["mail_duplicates_unaccounted"]
        + found["webhook_duplicates_unaccounted"]
        + (1 if found["longest_past_lease_s"] > found["lease_bound_s"] else 0)
        + found["leases_expired_still_sending"]
        + abs(reminders - found["reminder_commitments"])
        + found["reminder_commitments_without_one_reminder"]
        + found["reminders_without_one_delivered"]
        + sum(kind["ran_twice"] for kind in scheduled.values())
        + (0 if moved else 1)
    )


def wait_for_reminders(run: Run, timeout: float) -> float:
    """Until every reminder commitment has its reminder (the new beat's runs)."""
    t0 = time.monotonic()
    sql = (
        "SELECT count(*) FROM commitments_commitment c WHERE c.external_system = 'remind' "
        "AND NOT EXISTS (SELECT 1 FROM notifications_reminder r WHERE r.commitment_id = c.id)"
    )
    while time.monotonic() - t0 < timeout:
        with psycopg.connect(run.direct_url, autocommit=True) as conn:
            if fetch_row(conn, sql)[0] == 0:
                break
        time.sleep(1)
    return round(time.monotonic() - t0, 1)


def summarize(results: dict) -> str:
    lines = [LOAD_HEADER]
    for name, phase in results["phases"].items():
        lines += load_rows(name, phase["load"])
        extra = {k: v for k, v in phase.items() if k != "load"}
        if extra:
            lines.append(f"{'':<12} " + ", ".join(f"{k}: {v}" for k, v in extra.items()))
    lines.append("")
    for key, value in results["checks"].items():
        lines.append(f"{key:<42} {value}")
    lines.append(f"{'drained after (s)':<42} {results['drain_seconds']}")
    lines.append(f"{'reminders all made after (s)':<42} {results['reminders_seconds']}")
    lines.append(f"{'run time (s)':<42} {results['run_seconds']}")
    return "\n".join(lines)


REMINDER_FIXTURE = """
import datetime as dt
from django.contrib.auth import get_user_model
from django.utils import timezone
from accounts.services import user_email_mark_verified
from commitments.models import Commitment, Status
assigner = get_user_model().objects.get(email="bench-assigner@example.com")
now = timezone.now()
for k in range(%(n)d):
    user = get_user_model().objects.create_user(f"remind-%(batch)s-{k}@example.com",
                                                "remind passphrase long enough")
    user_email_mark_verified(user=user)
    Commitment.objects.create(status=Status.ACTIVE, assigner=assigner, assignee=user,
        description="Reminded once", external_system="remind",
        external_id=f"remind-%(batch)s-{k}", activated_at=now,
        deadline=now + dt.timedelta(hours=12))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=3.0, help="Requests/s per load stream.")
    parser.add_argument("--phase-seconds", type=float, default=20.0, help="Load per phase.")
    parser.add_argument("--cut-seconds", type=float, default=20.0, help="worker2's link down.")
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn workers per host.")
    parser.add_argument("--reminders", type=int, default=8, help="Reminders per batch (2).")
    parser.add_argument(
        "--lease-bound",
        type=float,
        default=20.0,
        help="Seconds a claim may outlive its lease before another host takes it "
        "(the sweep every 3 s, then the queue).",
    )
    parser.add_argument("--drain-timeout", type=float, default=240.0)
    parser.add_argument("--load-cpu", default="1")
    parser.add_argument(
        "--database-url",
        default=with_database(
            os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/commitments",
            (urlsplit(os.environ.get("DATABASE_URL", "")).path.lstrip("/") or "commitments")
            + "_hosts",
        ),
        help="The run's database on the machine's PostgreSQL (made afresh; "
        "default: DATABASE_URL's name + _hosts).",
    )
    parser.add_argument("--out", default=str(ROOT / "var" / "hosts" / "latest.json"))
    parser.add_argument("--keep", action="store_true", help="Keep the hosts' logs.")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if os.geteuid() != 0:
        raise SystemExit("Run as root: the hosts are network namespaces (ip netns).")
    install_missing()
    started = time.monotonic()
    run = Run(args)

    def terminate(signum, frame) -> None:
        raise SystemExit(f"stopped by signal {signum}")

    signal.signal(signal.SIGTERM, terminate)
    try:
        run.network()
        run.receiver = Receiver(GATEWAY)
        run.sink = SmtpSink(GATEWAY)
        run.data_host()
        run.environment()
        run.the_stage()
        run.the_service()
        for scenario in PHASES:
            scenario(run)
        log(f"draining (at most {args.drain_timeout:.0f} s)")
        run.results["reminders_seconds"] = wait_for_reminders(run, args.drain_timeout)
        run.results["drain_seconds"] = drain(run.direct_url, args.drain_timeout)
        time.sleep(2)  # the last answers reach the receiver and the sink
        run.results["checks"] = checks(run)
        run.results["balancer"] = (
            [{"t": round(t - run.watcher.t0, 1), **states} for t, states in run.watcher.balancer]
            if run.watcher
            else []
        )
    finally:
        run.stop()
    run.results["sent"] = run.streams.sent
    run.results["phases"] = run.phases
    run.results["run_seconds"] = round(time.monotonic() - started, 1)
    write_results(run.results, args.out, summarize(run.results))
    if run.results["checks"]["lost"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
