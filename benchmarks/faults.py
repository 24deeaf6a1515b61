"""Load held and faults survived: a soak, then faults under load, then checks.

    python -m benchmarks.faults                  # soak 60 s, then the faults (~5 min)
    python -m benchmarks.faults --quick          # a smoke run (~2 min)
    python -m benchmarks.faults --soak-seconds 600 --rate 20
    python -m benchmarks.faults --parts schemathesis --schemathesis-examples 200

Starts its own PostgreSQL cluster (initdb into a temporary folder, the
machine's /usr/lib/postgresql/*/bin, a free port; as root it runs as the
`postgres` user) and its own Redis server, so it can restart and stop them;
the service (gunicorn with config/gunicorn.py, `manage.py run_worker`) runs
on them with benchmarks/faults_settings.py. Last, schemathesis against the
running server (benchmarks/schema_check.py). Prints figures and a table, writes
var/faults/latest.json; see docs/faults.md. Nothing here is a timed test:
the one verdict is "lost", which must be 0.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:
    # Run as a script, benchmarks/ is the first entry of sys.path.
    from harness import reexec_as_module  # type: ignore[import-not-found]

    reexec_as_module("benchmarks.faults")

import psycopg

from benchmarks.harness import (
    CHECK_COUNTS,
    ENDPOINTS,
    LOAD_HEADER,
    PYTHON,
    ROOT,
    Redis,
    Service,
    Streams,
    against_answers,
    counted,
    drain,
    free_port,
    gunicorn_command,
    load_rows,
    log,
    machine,
    make_stage,
    needs_tools,
    now_iso,
    run_checked,
    service_env,
    shortfalls,
    wait_for_http,
    write_results,
)
from benchmarks.receiver import Receiver
from benchmarks.schema_check import run_schemathesis, summarize_schemathesis

HANG_SYSTEM = "hang"
HANG_ASSIGNER = "hang-assigner@example.com"


# --- the service's own PostgreSQL (Redis: harness.Redis) --------------------------------


class Postgres:
    """A throwaway cluster: trust auth on 127.0.0.1, fsync off (a crash of the
    server process loses nothing with it; the machine's crash would). Commits
    stay synchronous: an asynchronous commit would lose answered work to the
    immediate stop below, and count as the service's loss."""

    def __init__(self) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        if not found:
            raise SystemExit("No PostgreSQL binaries in /usr/lib/postgresql/*/bin.")
        self.bin = Path(found[-1]).parent
        self.root = os.geteuid() == 0
        self.folder = Path(tempfile.mkdtemp(prefix="faults-pg-"))
        if self.root:
            shutil.chown(self.folder, "postgres", "postgres")
        self.data = self.folder / "data"
        self.port = free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/faults"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.root:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(  # noqa: S603
            command, capture_output=True, text=True, timeout=120, check=check, cwd=self.folder
        )

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8")
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} "
            "-c fsync=off -c full_page_writes=off "
            "-c max_connections=200"
        )
        (self.folder / "options").write_text(options)
        self.start()
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "faults")

    def start(self) -> None:
        options = (self.folder / "options").read_text()
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.folder / "log"),
            "-w",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def cleanup(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


# --- memory ---------------------------------------------------------------------------


def tree_rss_kib(pid: int) -> int:
    """VmRSS of a process and all its descendants, in KiB (shared pages are
    counted in each process: an upper bound, fine for growth)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{p}/task").iterdir():
                children = (task / "children").read_text().split()
                todo += [int(c) for c in children]
        except (OSError, ValueError):
            continue
    return total


class Sampler(threading.Thread):
    def __init__(self, procs: dict, every: float = 2.0) -> None:
        super().__init__(daemon=True)
        self.procs, self.every = procs, every
        self.samples: list[dict] = []
        self.marks: dict[str, int] = {}  # name: index of a sample
        self.stop_event = threading.Event()
        self.t0 = time.monotonic()

    def run(self) -> None:
        while not self.stop_event.is_set():
            row: dict[str, float | int | None] = {"t": round(time.monotonic() - self.t0, 1)}
            for name, proc in list(self.procs.items()):
                row[name] = tree_rss_kib(proc.pid) if proc.poll() is None else None
            self.samples.append(row)
            self.stop_event.wait(self.every)


# --- the probe: what a client sees, body and all ----------------------------------------


class Probe(threading.Thread):
    """One inbox call every `every` s with urllib, noting each answer's status,
    whether it is JSON in the envelope ({"error": ...} on failure), and how long
    it took. A hang shows as a timeout."""

    def __init__(self, port: int, token: str, label: str, every: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.port, self.token, self.label, self.every = port, token, label, every
        self.stop_event = threading.Event()
        self.answers: list[dict] = []

    def run(self) -> None:
        n = 0
        while not self.stop_event.is_set():
            n += 1
            body = json.loads(ENDPOINTS["inbox"][1].replace("{n}", f"{self.label}-{n}"))
            request = urllib.request.Request(
                f"http://127.0.0.1:{self.port}/api/v1/inbox",
                data=json.dumps(body).encode(),
                headers={
                    "Authorization": f"Bearer {self.token}",
                    "Content-Type": "application/json",
                },
            )
            started = time.monotonic()
            answer: dict = {}
            try:
                with urllib.request.urlopen(request, timeout=15) as response:  # noqa: S310
                    answer = self._read(response.status, response.headers, response.read())
            except urllib.error.HTTPError as error:
                answer = self._read(error.code, error.headers, error.read())
            except OSError as error:
                answer = {"status": "failed", "error": type(error).__name__}
            answer["seconds"] = round(time.monotonic() - started, 3)
            self.answers.append(answer)
            self.stop_event.wait(self.every)

    @staticmethod
    def _read(status: int, headers, body: bytes) -> dict:
        kind = headers.get("Content-Type", "")
        envelope = False
        try:
            data = json.loads(body)
            envelope = status < 400 or isinstance(data.get("error"), str)
        except (ValueError, AttributeError):
            data = None
        return {
            "status": status,
            "json": "json" in kind and data is not None,
            "envelope": envelope,
            "error": data.get("error") if isinstance(data, dict) else None,
            "html": b"<html" in body[:500].lower() or b"<!doctype" in body[:500].lower(),
        }

    def summary(self) -> dict:
        statuses: dict[str, int] = {}
        errors: dict[str, int] = {}
        for a in self.answers:
            statuses[str(a["status"])] = statuses.get(str(a["status"]), 0) + 1
            if a.get("error"):
                errors[a["error"]] = errors.get(a["error"], 0) + 1
        failed = [a for a in self.answers if a["status"] == "failed"]
        bad = [
            a
            for a in self.answers
            if a["status"] != "failed" and (a["html"] or not a["json"] or not a["envelope"])
        ]
        return {
            "calls": len(self.answers),
            "statuses": statuses,
            "error_names": errors,
            "not_json_envelope": len(bad),
            "html": sum(1 for a in self.answers if a.get("html")),
            "no_answer": len(failed),
            "slowest_s": max((a["seconds"] for a in self.answers), default=None),
        }


# --- the run --------------------------------------------------------------------------


class Run:
    """One fault run: its own PostgreSQL and Redis, the two receivers (the
    second is the one that hangs), the service's processes, the stage, the
    load streams' counters and what they were answered, and the results."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.parts = args.parts
        self.folder = Path(tempfile.mkdtemp(prefix="faults-"))
        self.pg = Postgres()
        self.rd = Redis(self.folder)
        self.receiver, self.hanging = Receiver(), Receiver()
        self.service = Service(self.folder)
        self.procs: dict[str, subprocess.Popen] = {}
        self.worker_args = [PYTHON, "manage.py", "run_worker", "--loglevel=INFO"]
        self.sampler: Sampler | None = None
        self.env: dict[str, str] = {}
        self.ctx: dict = {}
        self.port = 0
        self.streams = Streams(args.load_cpu, ("inbox", "sync", "hang"))
        self.phases: dict[str, dict] = {}
        self.probes_accepted = 0  # inbox calls of the probes answered 201
        self.restarts_seen = 0  # "exited by itself" lines of the worker's log already noted
        self.results: dict = {
            "date": now_iso(),
            "machine": machine(),
            "settings": {
                "soak_seconds": args.soak_seconds,
                "fault_seconds": args.fault_seconds,
                "rate_per_stream": args.rate,
                "gunicorn_workers": args.workers,
                "parts": args.parts,
            },
        }

    # What it runs (docs/faults.md), in order.

    def own_postgres_and_redis(self) -> None:
        log(f"PostgreSQL {self.pg.bin.parent.name} on port {self.pg.port} ({self.pg.folder})")
        self.pg.init()
        log(f"Redis on port {self.rd.port}")
        self.rd.start()
        self.env = service_env(self.pg.url, self.rd.url, self.folder, "benchmarks.faults_settings")
        self.env.update(
            {
                "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
                "EMAIL_FILE_PATH": str(self.folder / "mail"),
                "WEB_CONCURRENCY": str(self.args.workers),
            }
        )
        log("migrating")
        run_checked([PYTHON, "manage.py", "migrate", "--noinput"], self.env)

    def the_stage(self) -> None:
        """The benchmark's stage, with enough Active commitments for every
        sync of the run, and the second assigner whose endpoint hangs."""
        args = self.args
        total = int(args.rate * (args.soak_seconds + 4 * args.fault_seconds) * 1.2 + 50)
        self.ctx = make_stage(self.env, active=total, completed=0, receiver_url=self.receiver.url)
        hang_active = int(max(1.0, args.rate / 4) * args.fault_seconds * 1.2) + 10
        fixture = HANG_FIXTURE % {
            "email": HANG_ASSIGNER,
            "system": HANG_SYSTEM,
            "url": self.hanging.url,
            "n": hang_active,
            "assignee": self.ctx["assignee"],
        }
        out = run_checked([PYTHON, "manage.py", "shell", "-c", fixture], self.env)
        self.ctx.update(json.loads(out.strip().splitlines()[-1]))
        self.ctx["sync_active"] = total
        self.ctx["hang_active"] = hang_active

    def the_service(self) -> None:
        """gunicorn and run_worker as production starts them, and the memory
        sampler on both."""
        self.port = free_port()
        log(f"gunicorn: {self.args.workers} workers, port {self.port}; manage.py run_worker")
        self.procs["web"] = self.service.start(
            "gunicorn", gunicorn_command(self.args.workers), dict(self.env, PORT=str(self.port))
        )
        self.procs["worker"] = self.service.start("worker", self.worker_args, self.env)
        wait_for_http(self.port)
        time.sleep(3)  # the worker connects
        self.sampler = Sampler(self.procs)
        self.sampler.start()
        self.results["worker_exits"] = []

    def revive(self, phase: str) -> None:
        """A worker that exited by itself (no fault of the run's asked it
        to) is a finding: noted. run_worker starts such a child again and
        logs it (lib/supervise.py); were run_worker itself gone, the
        script starts it again so the run goes on."""
        worker_log = self.service.folder / "worker.log"
        lines = [
            line
            for line in worker_log.read_text(errors="replace").splitlines()
            if "exited by itself" in line
        ]
        for line in lines[self.restarts_seen :]:
            log(f"during {phase}: {line.strip()} (run_worker started it again)")
            self.results["worker_exits"].append({"phase": phase, "child": line.strip()})
        self.restarts_seen = len(lines)
        code = self.procs["worker"].poll()
        if code is not None:
            log(f"run_worker exited by itself during {phase} (code {code}): started again")
            self.results["worker_exits"].append({"phase": phase, "code": code})
            self.restart_worker()

    def restart_worker(self) -> None:
        self.procs["worker"] = self.service.start("worker", self.worker_args, self.env)

    def drain_and_count(self) -> None:
        """The worker finishes (bounded by --drain-timeout), then the checks."""
        log(f"draining (at most {self.args.drain_timeout:.0f} s)")
        self.results["drain_seconds"] = drain(self.pg.url, self.args.drain_timeout)
        self.results["checks"] = checks(self.pg.url, self, self.receiver, self.hanging)
        if self.sampler:
            self.sampler.stop_event.set()
            self.sampler.join()
            self.results["rss"] = rss_summary(self.sampler.samples, self.sampler.marks)

    def stop(self) -> None:
        if self.sampler:
            self.sampler.stop_event.set()
        self.service.stop_all()
        self.rd.stop()
        self.pg.cleanup()
        self.receiver.server.shutdown()
        self.hanging.server.shutdown()
        if self.args.keep:
            log(f"logs kept in {self.folder}")
        else:
            shutil.rmtree(self.folder, ignore_errors=True)

    # The load.

    def load_phase(self, seconds: float, streams=("inbox", "sync")) -> dict:
        """Open-loop load at --rate per stream for `seconds`, in parallel."""
        return self.streams.phase(lambda name: self.stream_spec(name, seconds), streams)

    def stream_spec(self, name: str, seconds: float) -> dict:
        """The load job of one stream: the inbox, the completing sync, or the
        sync of the second assigner (`hang`), whose endpoint is the one that
        hangs, at a quarter of the rate."""
        token = self.ctx["hang_token"] if name == "hang" else self.ctx["token"]
        path, body, expect = ENDPOINTS["sync" if name == "hang" else name]
        if name == "hang":
            body = body.replace('"bench"', f'"{HANG_SYSTEM}"').replace("sync-", "hang-")
        return self.streams.spec(
            name,
            (path, body, expect),
            token=token,
            port=self.port,
            seconds=seconds,
            rate=self.args.rate if name != "hang" else max(1.0, self.args.rate / 4),
            active=self.ctx[f"{name}_active"] if name in ("sync", "hang") else None,
        )

    def under_load(self, name: str, fault, seconds: float, streams=("inbox", "sync")) -> None:
        """Load for `seconds` with a probe, and `fault(phase)` in a thread."""
        log(f"{name}: {seconds:.0f} s of load, the fault in the middle")
        probe = Probe(self.port, self.ctx["token"], f"probe-{name}")
        phase: dict = {}
        fault_thread = threading.Thread(target=fault, args=(phase,))
        probe.start()
        fault_thread.start()
        phase["load"] = self.load_phase(seconds, streams)
        fault_thread.join()
        probe.stop_event.set()
        probe.join()
        phase["probe"] = probe.summary()
        self.probes_accepted += phase["probe"]["statuses"].get("201", 0)
        self.phases[name] = phase


# --- the scenarios (docs/faults.md), each a part -------------------------------------


def soak(run: Run) -> None:
    """1. Steady load for --soak-seconds, memory marked at its start and end."""
    args, sampler = run.args, run.sampler
    assert sampler is not None  # started with the processes, before the scenarios
    log(f"soak: {args.soak_seconds:.0f} s at {args.rate}/s inbox + {args.rate}/s sync")
    sampler.marks["soak start"] = len(sampler.samples)
    run.phases["soak"] = {"load": run.load_phase(args.soak_seconds)}
    sampler.marks["soak end"] = len(sampler.samples) - 1


def down_a_while(run: Run, name: str, stop, start, seconds: float) -> None:
    """A quarter into a phase of load, `stop()`, and `seconds` later `start()`."""

    def fault(phase: dict) -> None:
        time.sleep(run.args.fault_seconds / 4)
        t0 = time.monotonic()
        stop()
        time.sleep(seconds)
        start()
        phase["down_seconds"] = round(time.monotonic() - t0, 1)

    run.under_load(name, fault, run.args.fault_seconds)
    run.revive(name)


def postgres_restarted(run: Run) -> None:
    """2. A quarter in: an immediate stop (every connection cut), 3 s down."""
    down_a_while(run, "postgres", lambda: run.pg.stop("immediate"), run.pg.start, 3)


def redis_stopped(run: Run) -> None:
    """3. A quarter in: Redis stopped (its queues lost with it), 5 s down,
    started empty."""
    down_a_while(run, "redis", run.rd.stop, run.rd.start, 5)


def receiver_hangs(run: Run) -> None:
    """4. The second assigner's receiver holds each POST longer than
    WEBHOOK_TIMEOUT, for three quarters of the phase and at least until two
    attempts reached it (at most 60 s), while the first assigner's endpoint
    keeps receiving."""
    hanging, receiver = run.hanging, run.receiver

    def fault(phase: dict) -> None:
        hanging.delay = 30.0
        t0 = time.monotonic()
        time.sleep(run.args.fault_seconds * 0.75)
        while hanging.arrived_between(t0, time.monotonic()) < 2 and time.monotonic() < t0 + 60:
            time.sleep(0.2)
        hanging.delay = 0.0
        t1 = time.monotonic()
        phase["hang_seconds"] = round(t1 - t0, 1)
        phase["attempts_at_hanging_endpoint_during_hang"] = hanging.arrived_between(t0, t1)
        phase["other_endpoint_received_during_hang"] = receiver.received_between(t0, t1)

    run.under_load("hang", fault, run.args.fault_seconds, streams=("inbox", "sync", "hang"))
    run.revive("hang")


def worker_killed(run: Run) -> None:
    """5. The receiver answers 1 s late; a third in, once a webhook send is in
    flight, SIGKILL to the whole run_worker tree, a new one 2 s later."""
    receiver = run.receiver

    def fault(phase: dict) -> None:
        receiver.delay = 1.0
        time.sleep(run.args.fault_seconds / 3)
        deadline = time.monotonic() + 30
        while receiver.in_flight == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        phase["sends_in_flight_at_kill"] = receiver.in_flight
        proc = run.procs["worker"]
        with contextlib.suppress(ProcessLookupError):  # it exited by itself
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        time.sleep(2)
        run.restart_worker()
        receiver.delay = 0.0

    run.under_load("worker_kill", fault, run.args.fault_seconds)


def schemathesis(run: Run) -> None:
    """6. Schemathesis against the server that went through all that."""
    args, ctx = run.args, run.ctx
    log(f"schemathesis: {args.schemathesis_examples} examples per operation and mode")
    run.results["schemathesis"] = run_schemathesis(
        run.port,
        ctx["token"],
        (ctx["assigner"], ctx["assignee"]),
        args.schemathesis_examples,
        args.schemathesis_seed,
    )
    run.revive("schemathesis")


SCENARIOS = {
    "soak": soak,
    "postgres": postgres_restarted,
    "redis": redis_stopped,
    "hang": receiver_hangs,
    "worker_kill": worker_killed,
    "schemathesis": schemathesis,
}
PARTS = tuple(SCENARIOS)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="A smoke run: short phases.")
    parser.add_argument("--soak-seconds", type=float, default=60.0)
    parser.add_argument("--fault-seconds", type=float, default=20.0, help="Load per fault.")
    parser.add_argument("--rate", type=float, default=10.0, help="Requests/s per load stream.")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers.")
    parser.add_argument("--drain-timeout", type=float, default=240.0)
    parser.add_argument("--load-cpu", default="1")
    parser.add_argument("--out", default=str(ROOT / "var" / "faults" / "latest.json"))
    parser.add_argument("--keep", action="store_true", help="Keep the logs' folder.")
    parser.add_argument(
        "--parts",
        default=",".join(PARTS),
        help=f"Comma-separated; they run in this order: {', '.join(PARTS)} (all by default).",
    )
    parser.add_argument(
        "--schemathesis-examples",
        type=int,
        default=250,
        help="Generated requests per operation and mode (positive, negative); --quick: 25.",
    )
    parser.add_argument("--schemathesis-seed", type=int, help="Repeat a run's generation.")
    args = parser.parse_args()
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; the parts are {', '.join(PARTS)}")
    if args.quick:
        args.soak_seconds = min(args.soak_seconds, 10.0)
        args.fault_seconds = min(args.fault_seconds, 12.0)
        args.schemathesis_examples = min(args.schemathesis_examples, 25)
    return args


def main() -> None:
    args = parse_args()
    needs_tools("taskset", "redis-server")
    run = Run(args)
    try:
        run.own_postgres_and_redis()
        run.the_stage()
        run.the_service()
        for name, scenario in SCENARIOS.items():  # in PARTS' order, whatever --parts' order
            if name in run.parts:
                scenario(run)
        run.drain_and_count()
    finally:
        run.stop()
    run.results["sent"] = run.streams.sent
    run.results["phases"] = run.phases
    write_results(run.results, args.out, summarize(run.results))
    if run.results["checks"]["lost"]:
        sys.exit(1)


HANG_FIXTURE = """
import json
from django.contrib.auth import get_user_model
from django.utils import timezone
from accounts.services import user_email_mark_verified
from commitments.models import Commitment, Status
from integrations.services import api_token_mint
from webhooks.services import webhook_endpoint_create
user = get_user_model().objects.create_user("%(email)s", "hang passphrase long enough")
user_email_mark_verified(user=user)
assignee = get_user_model().objects.get(email="%(assignee)s")
webhook_endpoint_create(user=user, external_system="%(system)s", url="%(url)s")
now = timezone.now()
Commitment.objects.bulk_create([Commitment(status=Status.ACTIVE, assigner=user, assignee=assignee,
    description="Fault run", external_system="%(system)s", external_id=f"hang-{n}",
    activated_at=now) for n in range(%(n)d)])
print(json.dumps({"hang_token": api_token_mint(user=user, name="hang").plaintext}))
"""

ATTEMPTS_BY_ENDPOINT = """
SELECT e.external_system, count(*), sum(w.attempts), max(w.attempts)
FROM webhooks_webhookdelivery w JOIN webhooks_webhookendpoint e ON w.endpoint_id = e.id
GROUP BY 1 ORDER BY 1
"""
OUTCOMES = """
SELECT 'webhook', outcome, count(*) FROM webhooks_webhookattempt GROUP BY 2
UNION ALL SELECT 'nudge', outcome, count(*) FROM notifications_nudgeattempt GROUP BY 2
ORDER BY 1, 2
"""


def checks(url: str, run: Run, receiver: Receiver, hanging: Receiver) -> dict:
    """In the database and at the receivers, after the drain: what was
    answered against what is there (docs/faults.md, the paragraph after the
    scenarios)."""
    with psycopg.connect(url, autocommit=True) as conn:
        found = counted(conn, CHECK_COUNTS)
        found["webhook_attempts_by_endpoint"] = {
            system: {"deliveries": d, "attempts": a, "most_attempts": m}
            for system, d, a, m in conn.execute(ATTEMPTS_BY_ENDPOINT).fetchall()
        }
        found["attempt_outcomes"] = {
            f"{kind} {outcome or 'open'}": n
            for kind, outcome, n in conn.execute(OUTCOMES).fetchall()
        }
    sent = run.streams.sent
    accepted = sent["inbox"].get("201", 0) + run.probes_accepted
    against_answers(found, accepted, synced=sent["sync"].get("200", 0) + sent["hang"].get("200", 0))
    found["webhook_posts_received"] = len(receiver.ids) + len(hanging.ids)
    found["webhook_ids_received_distinct"] = len(set(receiver.ids + hanging.ids))
    # The sum of the shortfalls: answered work the database or the receivers
    # do not show, and work left undone after the drain.
    found["lost"] = shortfalls(found)
    return found


def rss_summary(samples: list[dict], marks: dict[str, int]) -> dict:
    """RSS at the soak's start, middle and end and at the run's end (after the
    faults; the worker then is the one started after the kill)."""
    start, end = marks.get("soak start", 0), marks.get("soak end", len(samples) - 1)
    points = {
        "soak_start": samples[start],
        "soak_middle": samples[(start + end) // 2],
        "soak_end": samples[end],
        "run_end": samples[-1],
    }
    out: dict[str, Any] = {}
    for name in ("web", "worker"):
        values = [s[name] for s in samples if s.get(name)]
        row = {k: round((v.get(name) or 0) / 1024, 1) for k, v in points.items()}
        row["max"] = round(max(values, default=0) / 1024, 1)
        row["soak_growth"] = round(row["soak_end"] - row["soak_start"], 1)
        out[name] = row
    out["samples"] = len(samples)
    return out


def summarize(results: dict) -> str:
    lines = [LOAD_HEADER]
    for name, phase in results["phases"].items():
        lines += load_rows(name, phase["load"])
        if "probe" in phase:
            p = phase["probe"]
            answers = ", ".join(f"{k}: {v}" for k, v in sorted(p["statuses"].items()))
            names = ", ".join(f"{k}: {v}" for k, v in sorted(p["error_names"].items()))
            lines.append(
                f"{name:<12} probe  {p['calls']:>8}  answers {answers}; errors {names or '-'}; "
                f"not JSON envelope {p['not_json_envelope']}, HTML {p['html']}, no answer "
                f"{p['no_answer']}, slowest {p['slowest_s']} s"
            )
        extra = {k: v for k, v in phase.items() if k not in ("load", "probe")}
        if extra:
            lines.append(f"{'':<12} " + ", ".join(f"{k}: {v}" for k, v in extra.items()))
    if "schemathesis" in results:
        lines.append(summarize_schemathesis(results["schemathesis"]))
    lines.append("")
    for key, value in results["checks"].items():
        lines.append(f"{key:<38} {value}")
    lines.append(f"{'drained after (s)':<38} {results['drain_seconds']}")
    for exit_ in results.get("worker_exits", []):
        what = exit_.get("child") or f"run_worker exited, code {exit_['code']}"
        lines.append(f"a worker exited by itself during {exit_['phase']}: {what}")
    for name in ("web", "worker"):
        r = results.get("rss", {}).get(name)
        # Without a soak (--parts), its start and end are the run's.
        span = "soak" if "soak" in results["phases"] else "run (no soak)"
        if r:
            lines.append(
                f"RSS MiB {name:<6} {span} start {r['soak_start']}, middle {r['soak_middle']}, "
                f"end {r['soak_end']} (growth {r['soak_growth']}); run end {r['run_end']}, "
                f"max {r['max']}"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
