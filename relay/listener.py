"""The relay's loop: outbox events queued the moment their transaction commits,
with no work on the path of the request that wrote them.

A thread of each Celery worker that consumes the default queue (started by
config/celery.py when the worker is ready; several relays share the work, as
each takes its events with SKIP LOCKED). It runs `relay.outbox.outbox_relay`
(a look), and while a look finds events it looks again at once: a busy relay
needs no notification. Nor does one whose dispatch messages still wait in the
broker (relay.outbox: each tops its batch up with what is due when it runs,
and the relay queues nothing meanwhile): it looks again every
BROKER_BUSY_PAUSE s until they are taken. When one finds none, on PostgreSQL, it says it waits
(migration commitments 0012: a row of its own in `commitments_outboxwaiter`,
set on its listening connection under the writers' advisory lock, so that
the writers committing then are done), looks once more, and waits for a
notification on `commitments.outbox.OUTBOX_CHANNEL` for at most
OUTBOX_RELAY_WAIT s; woken, it says it works (writers stop notifying) and
looks. The outbox trigger notifies at a writer's commit only while some
relay waits, so under load writes do not queue for PostgreSQL's
notification lock at commit (docs/benchmarks.md, "Notify only a waiting
relay"). `Relay.wakes` counts why each wait ended. On SQLite, which has no
notifications, it looks every OUTBOX_RELAY_WAIT s.

What it misses is made up: a notification that arrives while it looks is
read at the next wait; one lost with its connection by the timed look; an
event nobody queued at all by the sweep. A relay that dies while waiting
leaves its row, and writers notify (the old behaviour, a cost only) until
its wait and a second are over; one that dies working leaves nothing that
matters. A relay that starts or stops removes the rows of relays not
waiting then (its own too when it stops; a live one makes its row again
when it next waits).

A database or broker that fails is logged and tried again after a pause; the
loop ends only with its worker.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections import Counter

import psycopg
from django.conf import settings
from django.db import connection, connections

from commitments.outbox import (
    OUTBOX_CHANNEL,
    outbox_relay_gone,
    outbox_relay_waits,
    outbox_relay_works,
)
from relay.outbox import dispatches_waiting, outbox_relay, outbox_relay_due

log = logging.getLogger(__name__)

FAILURE_PAUSE = 2.0  # s before trying again after the database or broker failed
STOP_CHECK = 0.5  # s: how soon a waiting relay notices stop()
# s between looks while dispatch messages wait in the broker (no notification
# comes then: writers notify only a waiting relay).
BROKER_BUSY_PAUSE = 0.05


class Relay(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="outbox-relay", daemon=True)
        self.stopping = threading.Event()
        self.relayed = 0  # events queued since the start (for tests and logs)
        # Why each wait ended (PostgreSQL): "notified", "timed" (its
        # OUTBOX_RELAY_WAIT went by) or "stopped"; "found late" counts the
        # looks made after saying it waits that found events, and "broker
        # busy" the pauses, not waiting, while dispatch messages wait.
        self.wakes: Counter[str] = Counter()
        self.waiting = threading.Event()  # set while it waits (for tests)

    def stop(self, timeout: float = 5) -> None:
        self.stopping.set()
        self.join(timeout)

    def run(self) -> None:
        log.info("Outbox relay started (%s).", connection.vendor)
        while not self.stopping.is_set():
            try:
                self._relay_until_stopped()
            except Exception:
                log.warning("Outbox relay failed; trying again shortly.", exc_info=True)
                self.stopping.wait(FAILURE_PAUSE)
            finally:
                # This thread's connections: closed so the next round starts clean.
                connection.close()

    def _relay_until_stopped(self) -> None:
        if connection.vendor != "postgresql":
            while not self.stopping.is_set():
                self.relayed += outbox_relay()
                self.stopping.wait(settings.OUTBOX_RELAY_WAIT)
            return
        wakeup = _Notifications(self.stopping)
        try:
            while not self.stopping.is_set():
                if dispatches_waiting():
                    # Dispatch messages still wait in the broker, and each
                    # tops its batch up with what is due when it runs: the
                    # relay is not told (writers do not notify), it looks
                    # again shortly, and queues once they are taken.
                    self.wakes["broker busy"] += 1
                    self.stopping.wait(BROKER_BUSY_PAUSE)
                    continue
                found = outbox_relay_due()
                self.relayed += found
                if found:
                    continue  # busy: nobody notifies it, it looks again at once
                # Nothing due: from now writers notify, those committing now
                # are done, one more look finds theirs, and then it waits.
                wait = settings.OUTBOX_RELAY_WAIT
                deadline = time.monotonic() + wait
                wakeup.announce(wait)
                found = outbox_relay_due()
                self.relayed += found
                if found:
                    self.wakes["found late"] += 1
                else:
                    self.waiting.set()
                    self.wakes[wakeup.wait(deadline)] += 1
                    self.waiting.clear()
                wakeup.working()
        finally:
            wakeup.close()


class _Notifications:
    """The outbox's notifications, on a connection of its own in autocommit:
    to DATABASE_LISTEN_URL (PostgreSQL itself when DATABASE_URL is a pooler
    in transaction mode), else with Django's settings for the database. It
    LISTENs, and says on the same session when the relay waits (migration
    commitments 0012: writers notify only then)."""

    def __init__(self, stopping: threading.Event) -> None:
        self.stopping = stopping
        self.name = f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        if settings.DATABASE_LISTEN_URL:
            self.pg = psycopg.connect(settings.DATABASE_LISTEN_URL, autocommit=True)
            self._close = self.pg.close
        else:
            wrapper = connections.create_connection("default")
            wrapper.ensure_connection()
            wrapper.set_autocommit(True)
            self.pg = wrapper.connection
            self._close = wrapper.close
        self.pg.execute(f"LISTEN {OUTBOX_CHANNEL}")
        # The rows of relays that died (or reconnected) not waiting go; a
        # live relay's comes back when it next waits.
        outbox_relay_gone(self.pg, relay=self.name)

    def announce(self, seconds: float) -> None:
        """Writers notify from now for `seconds` (and a margin), and those
        that read otherwise have committed. What was heard before is dropped:
        the look that follows finds those events."""
        outbox_relay_waits(self.pg, relay=self.name, seconds=seconds)
        for _ in self.pg.notifies(timeout=0):
            pass

    def working(self) -> None:
        outbox_relay_works(self.pg, relay=self.name)

    def wait(self, deadline: float) -> str:
        """Return at the first notification ("notified"), at `deadline` (a
        time.monotonic(): "timed"), or soon after stop() ("stopped")."""
        while not self.stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return "timed"
            for _ in self.pg.notifies(timeout=min(left, STOP_CHECK), stop_after=1):
                return "notified"
        return "stopped"

    def close(self) -> None:
        with contextlib.suppress(Exception):
            outbox_relay_gone(self.pg, relay=self.name)
        with contextlib.suppress(Exception):
            self._close()


_relay: Relay | None = None


def start() -> Relay:
    """Start the process's relay (once)."""
    global _relay
    if _relay is None or not _relay.is_alive():
        _relay = Relay()
        _relay.start()
    return _relay


def stop() -> None:
    if _relay is not None:
        _relay.stop()
