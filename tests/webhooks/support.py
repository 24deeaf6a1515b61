"""Helpers for the webhook tests: a loopback receiver that keeps the raw
bytes and headers of every POST, a clock the test moves, and a commitment
with an external mapping. Plain functions and classes."""

from __future__ import annotations

import datetime as dt
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from django.utils import timezone

from audit.services import Actor
from commitments import services
from tests.delivery.nudge_support import Reply


@dataclass
class Hit:
    path: str
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str:
        lowered = {k.lower(): v for k, v in self.headers.items()}
        return lowered[name.lower()]


class Receiver:
    """An integrator's endpoint on 127.0.0.1: answers POSTs with queued
    replies (then `default`), recording the raw bytes and headers."""

    def __init__(self, default: Reply | None = None) -> None:
        self.default = default or Reply(200, "thanks")
        self.replies: deque[Reply] = deque()
        self.hits: list[Hit] = []
        self._cond = threading.Condition()
        self._holds: list[threading.Event] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._cond:
                    receiver.hits.append(Hit(self.path, dict(self.headers), raw))
                    reply = receiver.replies.popleft() if receiver.replies else receiver.default
                    receiver._cond.notify_all()
                if reply.hold is not None:
                    reply.hold.wait(timeout=60)
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

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/hooks/commitments"

    def reply_with(self, *replies: Reply) -> None:
        for reply in replies:
            if reply.hold is not None:
                self._holds.append(reply.hold)
            self.replies.append(reply)

    def wait_for_hits(self, count: int, timeout: float = 20) -> list[Hit]:
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.hits) >= count, timeout=timeout)
        assert ok, f"expected {count} request(s), got {len(self.hits)}"
        return list(self.hits)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for hold in self._holds:
            hold.set()
        self.server.shutdown()
        self.server.server_close()


class Clock:
    """`django.utils.timezone.now`, as the test sets it."""

    def __init__(self, start: dt.datetime) -> None:
        self.now = start

    def __call__(self) -> dt.datetime:
        return self.now

    def advance_to(self, moment: dt.datetime) -> None:
        assert moment >= self.now
        self.now = moment

    def advance(self, **delta: float) -> None:
        self.now += dt.timedelta(**delta)


def install_clock(monkeypatch, start: dt.datetime | None = None) -> Clock:
    clock = Clock(start or dt.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC))
    monkeypatch.setattr(timezone, "now", clock)
    return clock


def mapped_pending(assigner, assignee, *, system: str = "jira", external_id: str = "OPS-42"):
    """A commitment from the inbox path: Pending_Handshake, with a mapping."""
    return services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Ship the quarterly report",
        deadline=dt.datetime(2030, 3, 1, 17, 0, tzinfo=dt.UTC),
        external_system=system,
        external_id=external_id,
    )


def mapped_active(assigner, assignee, **kwargs):
    commitment = mapped_pending(assigner, assignee, **kwargs)
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    commitment.refresh_from_db()
    return commitment
