"""Fake services and real processes for tests: a loopback HTTP server playing Slack or
Teams (or any receiver), Celery worker processes, a Redis server of a test's own,
reading what a file mail backend wrote. Plain functions and classes."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import connection

if TYPE_CHECKING:
    from email.message import Message

    from accounts.models import User

ROOT = Path(__file__).resolve().parents[2]
# CI: a test that needs a service (PostgreSQL, Redis, chromium) fails without it
# instead of skipping.
REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"


# --- a loopback server playing Slack or Teams ---------------------------------------


@dataclass
class Reply:
    status: int = 200
    body: str = "ok"
    headers: dict[str, str] = field(default_factory=dict)
    # When set, the answer waits until the event is set (a slow service).
    hold: threading.Event | None = None


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any


class FakeService:
    """An HTTP server on 127.0.0.1 answering POSTs with queued replies (then
    `default`), recording every request it received (`record`)."""

    path = "/services/T000/B000/secret"
    hold_timeout = 30  # s a held reply waits at most

    def __init__(self, default: Reply | None = None) -> None:
        self.default = default or Reply()
        self.replies: deque[Reply] = deque()
        self.requests: list[Received] = []
        self._cond = threading.Condition()
        self._holds: list[threading.Event] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                with service._cond:
                    service.requests.append(service.record(self.path, dict(self.headers), raw))
                    reply = service.replies.popleft() if service.replies else service.default
                    service._cond.notify_all()
                if reply.hold is not None:
                    reply.hold.wait(timeout=service.hold_timeout)
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    data = reply.body.encode()
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client is gone (a killed worker, a timeout)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def record(self, path: str, headers: dict[str, str], raw: bytes) -> Any:
        """What is kept of one request: the body parsed as JSON when it is."""
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw
        return Received(path, headers, body)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}{self.path}"

    def reply_with(self, *replies: Reply) -> None:
        for reply in replies:
            if reply.hold is not None:
                self._holds.append(reply.hold)
            self.replies.append(reply)

    def wait_for_requests(self, count: int, timeout: float = 15) -> list[Received]:
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.requests) >= count, timeout=timeout)
        assert ok, f"expected {count} request(s), got {len(self.requests)}"
        return list(self.requests)

    def __enter__(self) -> FakeService:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for hold in self._holds:
            hold.set()
        self.server.shutdown()
        self.server.server_close()


# --- a nudge to send -----------------------------------------------------------------


def new_request_nudge(
    assigner: User, assignee: User, *, description: str = "Ship the report"
) -> uuid.UUID:
    """The id of the nudge a new request from `assigner` to `assignee` makes,
    dispatched as the worker would (nothing sent yet)."""
    from audit.services import Actor
    from commitments import services
    from commitments.models import OutboxEvent
    from relay import outbox

    commitment = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description=description,
        deadline=None,
    )
    (delivery_id,) = outbox.outbox_event_dispatch(
        event_id=OutboxEvent.objects.get(commitment=commitment).pk
    )
    return delivery_id


# --- waiting --------------------------------------------------------------------------


def wait_until(predicate: Callable[[], Any], *, timeout: float = 20, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(0.1)


# --- e-mail written by django.core.mail.backends.filebased ----------------------------


def read_mails(folder: Path) -> list[Message]:
    """Every message the file backend wrote into `folder` (one file per
    connection, messages separated by a line of dashes)."""
    messages: list[Message] = []
    if not folder.exists():
        return messages
    for path in sorted(folder.iterdir()):
        for chunk in path.read_bytes().split(b"\n" + b"-" * 79 + b"\n"):
            if chunk.strip():
                messages.append(message_from_bytes(chunk.strip() + b"\n"))
    return messages


# --- processes ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def current_database_url() -> str:
    """The URL of the database this test runs on (pytest-django's test_...),
    for a subprocess that must see the same rows."""
    db = connection.settings_dict
    auth = db["USER"] or ""
    if db.get("PASSWORD"):
        auth += f":{db['PASSWORD']}"
    host = db["HOST"] or "127.0.0.1"
    port = db["PORT"] or 5432
    return f"postgres://{auth}@{host}:{port}/{db['NAME']}"


def subprocess_env(tmp: Path, **overrides: str | None) -> dict[str, str]:
    """Environment of a worker or web process for a test: the test's database,
    a private VAR_DIR, mail written to tmp/mail, fast sweeps. An override of
    None removes the variable."""
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "tests.harness.worker_settings",
            "PYTHONPATH": str(ROOT),
            "VAR_DIR": str(tmp / "var"),
            "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
            "EMAIL_FILE_PATH": str(tmp / "mail"),
            "TEST_OUTBOX_SWEEP_INTERVAL": "1",
            "TEST_OUTBOX_SWEEP_GRACE": "0",
            "TEST_OUTBOX_REQUEUE_AFTER": "1",
            "LOG_LEVEL": "INFO",
        }
    )
    if connection.vendor == "postgresql":
        env["DATABASE_URL"] = current_database_url()
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


class Process:
    """A child process in its own process group, logging to a file; killed
    (the whole group) on exit whatever happens."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.args, self.env, self.log = args, env, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        handle = self.log.open("ab")
        self.proc = subprocess.Popen(
            self.args,
            env=self.env,
            cwd=ROOT,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        handle.close()
        return self

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for_output(self, text: str, timeout: float = 20) -> None:
        def seen() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"{self.args[0]} exited early:\n{self.output()[-3000:]}")
            return text in self.output()

        try:
            wait_until(seen, timeout=timeout, what=f"{text!r} in {self.log.name}")
        except AssertionError:
            print(self.output()[-3000:])
            raise

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def __enter__(self) -> Process:
        return self.start()

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.kill()
        if exc_type is not None:
            # The test failed inside: show this process's side of it.
            print(f"--- last lines of {self.log} ---\n{self.output()[-6000:]}")


def celery_worker(env: dict[str, str], log: Path, *, concurrency: int = 1) -> Process:
    """`celery -A config worker` with beat embedded (the sweep), as deployed."""
    schedule = Path(env["VAR_DIR"]) / "celerybeat-schedule"
    schedule.parent.mkdir(parents=True, exist_ok=True)
    return Process(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--beat",
            f"--schedule={schedule}",
            f"--concurrency={concurrency}",
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        env,
        log,
    )


def manage(*args: str) -> list[str]:
    return [sys.executable, str(ROOT / "manage.py"), *args]


def run_python(
    code: str, env: dict[str, str], timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh Django process (a stand-in for a web process).
    Fails the test if it fails."""
    prelude = "import django\ndjango.setup()\n"
    done = subprocess.run(
        [sys.executable, "-c", prelude + code],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def redis_server_available() -> bool:
    return shutil.which("redis-server") is not None and shutil.which("redis-cli") is not None


def purge_queue(redis_url: str) -> None:
    """Empty the Celery queues on `redis_url`, so messages left by other tests
    (ids of rows long gone) do not hold up this one."""
    import redis

    client = redis.Redis.from_url(redis_url, socket_timeout=5)
    client.delete("celery", "nudges", "webhooks", "unacked", "unacked_index")
    client.close()


class RedisServer:
    """A Redis server of a test's own on `port`, which the test may stop (SIGKILL,
    as a crash) and start again on the same port, empty."""

    def __init__(self, port: int, folder: Path) -> None:
        self.port, self.folder = port, folder
        self.starts = 0
        self.process: Process | None = None

    def start(self) -> RedisServer:
        self.starts += 1
        self.process = Process(
            [
                *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no"),
            ],
            dict(os.environ),
            self.folder / f"redis-{self.starts}.log",
        ).start()
        self.process.wait_for_output("Ready to accept connections")
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
