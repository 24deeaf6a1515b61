"""Keep a few child processes running: start each, start one again when it
exits on its own (after a back-off, logged), and stop them all on SIGTERM or
SIGINT. `manage.py run_worker` (relay/management/commands/run_worker.py)
runs the Celery workers and beat under it.

- A child that exits while nobody asked it to is started again after
  `backoff_initial` seconds, doubled for each further exit that comes less
  than `stable_after` seconds after its start, up to `backoff_max`; a child
  that ran `stable_after` seconds starts again after `backoff_initial`.
- A child whose *first* run ends with an exit code (not a signal) within
  `startup_grace` seconds did not start: bad settings, which starting again
  would only repeat (a Celery worker or beat with unsafe production
  settings exits so, config/celery.py). The others are stopped and `run`
  returns that code.
- SIGTERM or SIGINT: each child gets SIGTERM (a Celery worker's warm
  shutdown: it finishes the tasks it runs) and `stop_timeout` seconds to
  exit, then SIGKILL; `run` returns 0.

- A child may run at a lower CPU priority than the others (`nice`, added
  to its niceness as it starts), or under Linux's idle scheduling policy
  (`idle`: SCHED_IDLE, the CPU only when no other process wants it, given
  up the moment one wakes): `run_worker` gives the outbox's and nudges'
  worker both, so that its bulk work on a shared core does not make the
  webhooks' worker, which waits on one receiver at a time, wait for the
  CPU after each answer too (docs/benchmarks.md, "The webhook line's turn
  on the CPU" and "The line's wake-ups").

The children share this process's group, so a signal to the group (a
terminal's Ctrl-C, a SIGKILL to the whole tree) reaches them too, and
`preexec_fn` may make each die with its parent.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.5


@dataclass
class Child:
    name: str
    argv: list[str]
    nice: int = 0  # added to its CPU niceness as it starts (`os.nice`)
    idle: bool = False  # runs under SCHED_IDLE where there is one (`run_idle`)
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    starts: int = 0
    quick_exits: int = 0  # consecutive exits within stable_after of the start
    due: float | None = None  # when to start it again


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


@dataclass
class Supervisor:
    children: list[Child]
    backoff_initial: float = 1.0
    backoff_max: float = 60.0
    stable_after: float = 60.0
    startup_grace: float = 10.0
    stop_timeout: float = 70.0
    preexec_fn: Callable[[], None] | None = None
    _stop_signal: int | None = field(default=None, init=False)

    @classmethod
    def of(
        cls,
        commands: Sequence[tuple[str, list[str]]],
        nice: dict[str, int] | None = None,
        idle: Sequence[str] = (),
        **options: Any,
    ) -> Supervisor:
        """Children from (name, argv) pairs; `nice` by name; `idle`, the
        names of those that run under SCHED_IDLE."""
        nice = nice or {}
        return cls(
            [
                Child(name, list(argv), nice=nice.get(name, 0), idle=name in idle)
                for name, argv in commands
            ],
            **options,
        )

    # --- the loop -----------------------------------------------------------------

    def run(self) -> int:
        previous = {
            sig: signal.signal(sig, self._on_stop_signal) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            for child in self.children:
                self._start(child)
            while self._stop_signal is None:
                failed = self._check_children()
                if failed is not None:
                    self._stop_all()
                    return failed
                time.sleep(POLL_SECONDS)
            logger.info(
                "Stopping the workers (%s received).", signal.Signals(self._stop_signal).name
            )
            self._stop_all()
            return 0
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_stop_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop_signal = signum

    def _check_children(self) -> int | None:
        """Notice exits and start again what is due; the exit code to give up
        with when a child could not start at all."""
        now = time.monotonic()
        for child in self.children:
            if child.proc is not None:
                code = child.proc.poll()
                if code is None:
                    continue
                child.proc = None
                ran = now - child.started_at
                if child.starts == 1 and code > 0 and ran < self.startup_grace:
                    logger.error(
                        "The %s did not start (%s after %.1f s); stopping the others.",
                        child.name,
                        describe_exit(code),
                        ran,
                    )
                    return code
                child.quick_exits = child.quick_exits + 1 if ran < self.stable_after else 0
                delay = min(
                    self.backoff_initial * 2 ** max(child.quick_exits - 1, 0), self.backoff_max
                )
                child.due = now + delay
                logger.error(
                    "The %s exited by itself (%s after %.1f s); starting it again in %.0f s.",
                    child.name,
                    describe_exit(code),
                    ran,
                    delay,
                )
            elif child.due is not None and now >= child.due:
                proc = self._start(child)
                logger.warning(
                    "Started the %s again (pid %d, start %d).",
                    child.name,
                    proc.pid,
                    child.starts,
                )
        return None

    def _start(self, child: Child) -> subprocess.Popen[bytes]:
        def before_exec() -> None:
            if self.preexec_fn is not None:
                self.preexec_fn()
            if child.nice:
                os.nice(child.nice)
            if child.idle:
                run_idle()

        proc = subprocess.Popen(child.argv, preexec_fn=before_exec)  # noqa: S603 (our own commands)
        child.proc = proc
        child.started_at = time.monotonic()
        child.starts += 1
        child.due = None
        return proc

    def _stop_all(self) -> None:
        running = [(child, child.proc) for child in self.children if child.proc is not None]
        for _child, proc in running:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout
        for child, proc in running:
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                logger.error(
                    "The %s did not stop within %.0f s: killed.", child.name, self.stop_timeout
                )
                proc.kill()
                proc.wait()
            child.proc = None


def run_idle() -> None:
    """Put this process under the idle scheduling policy (Linux's
    SCHED_IDLE; its threads and children inherit it): it runs when no other
    process wants the CPU and is preempted the moment one wakes. Under the
    normal policy at a higher niceness, a woken process waits for the
    running one's slice to end (a few ms), and a webhook line wakes two or
    three times a send. Any process may lower its own policy so. Where there
    is no such policy, or it is refused, nothing changes (the niceness still
    applies)."""
    policy = getattr(os, "SCHED_IDLE", None)
    if policy is not None:
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, policy, os.sched_param(0))


# --- a supervisor process of its own ---------------------------------------------------


def _die_with_parent() -> None:
    """In the child, before exec: be sent SIGTERM when the parent dies, even
    by SIGKILL (Linux), so no orphaned worker is left behind."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def main(argv: list[str]) -> int:
    """`python -m lib.supervise '<json>'`: supervise the children the JSON
    names (`{"children": [[name, argv], ...], "stop_timeout": s, "nice":
    {name: n}, "idle": [name, ...]}`), each made to die with this process.
    `manage.py run_worker` execs this once it has worked out its children,
    so the process that stays up to watch them holds the standard library
    and this module, not Django and the application (a few MiB where the
    command held a hundred)."""
    import json

    logging.basicConfig(
        level=logging.INFO, format="[%(asctime)s: %(levelname)s/supervisor] %(message)s"
    )
    spec = json.loads(argv[0])
    supervisor = Supervisor.of(
        [(name, list(child_argv)) for name, child_argv in spec["children"]],
        nice=spec.get("nice"),
        idle=spec.get("idle", ()),
        preexec_fn=_die_with_parent,
        stop_timeout=float(spec.get("stop_timeout", 70.0)),
    )
    return supervisor.run()


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
