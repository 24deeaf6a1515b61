"""Run the background workers: a Celery worker for the nudges and the outbox,
a second worker for the outbound webhooks' queue (settings.WEBHOOK_QUEUE),
and beat (the scheduler of the outbox sweep and the reminders), each a child
process that this command supervises (lib/supervise.py): a child that exits
by itself (a crash, a kill, an outage it did not survive) is started again
after a back-off, logged; SIGTERM or SIGINT to this command stops them all
(the workers' warm shutdown) and it exits. A child that could not start at
all (bad settings) stops the others and this command exits with its code.

The webhooks get a process of their own because a receiver may take the
whole WEBHOOK_TIMEOUT (10 s) to fail, again and again: on the same pool,
webhook sends would take every slot and a nudge would wait behind them.
Two workers on two queues cannot hold each other up.

With REDIS_URL unset this is the embedded default: the broker is a folder
under VAR_DIR that web and workers share, so `manage.py runserver` plus
`manage.py run_worker` deliver nudges and webhooks with no other service.
With Redis, run this command, or, for more workers, `celery -A config
worker` processes, `celery -A config worker -Q webhooks` processes, and a
single `celery -A config beat` (compose.yaml does).
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from lib.supervise import Supervisor

DEFAULT_QUEUE = "celery"


def _die_with_parent() -> None:
    """In the child, before exec: be sent SIGTERM when the parent dies, even
    by SIGKILL (Linux), so no orphaned worker is left behind."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Command(BaseCommand):
    help = "Run the Celery workers (nudges with the outbox sweep, and webhooks)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--concurrency", type=int, default=2, help="Worker processes (default 2)."
        )
        parser.add_argument(
            "--webhook-concurrency",
            type=int,
            default=3,
            help="Processes of the webhooks' worker (default 3: more than "
            "WEBHOOK_USER_IN_FLIGHT, so one person's slow receivers never hold them all); "
            "0 starts none here (another process consumes the webhooks queue).",
        )
        parser.add_argument(
            "--queues",
            default=DEFAULT_QUEUE,
            help="Queues this worker consumes (default: the nudges' and the outbox's).",
        )
        parser.add_argument("--loglevel", default="INFO")
        parser.add_argument(
            "--no-beat",
            action="store_true",
            help="Do not run the sweep here (another process runs beat).",
        )

    def handle(self, *args, **options) -> None:
        queues = options["queues"]
        loglevel = f"--loglevel={options['loglevel']}"
        children = [
            (
                f"worker of the {queues!r} queue",
                worker_argv(
                    queues=queues,
                    name="webhooks" if queues == settings.WEBHOOK_QUEUE else "celery",
                    concurrency=options["concurrency"],
                    loglevel=loglevel,
                ),
            )
        ]
        if options["webhook_concurrency"] > 0 and queues != settings.WEBHOOK_QUEUE:
            children.append(
                (
                    f"worker of the {settings.WEBHOOK_QUEUE!r} queue",
                    worker_argv(
                        queues=settings.WEBHOOK_QUEUE,
                        name="webhooks",
                        concurrency=options["webhook_concurrency"],
                        loglevel=loglevel,
                    ),
                )
            )
        if not options["no_beat"]:
            schedule = Path(settings.CELERY_BEAT_SCHEDULE_FILENAME)
            schedule.parent.mkdir(parents=True, exist_ok=True)
            children.append(("beat", [*CELERY, "beat", f"--schedule={schedule}", loglevel]))
        broker = "Redis" if settings.REDIS_URL else "the embedded broker in VAR_DIR"
        self.stdout.write(
            f"Starting the background workers on {broker}: "
            + ", ".join(name for name, _ in children)
            + "."
        )
        self.stdout.flush()
        supervisor = Supervisor.of(
            children,
            preexec_fn=_die_with_parent,
            # A warm shutdown waits for the tasks running; none runs longer.
            stop_timeout=settings.CELERY_TASK_TIME_LIMIT + 10,
        )
        code = supervisor.run()
        if code:
            sys.exit(code)


CELERY = [sys.executable, "-m", "celery", "-A", "config"]


def worker_argv(*, queues: str, name: str, concurrency: int, loglevel: str) -> list[str]:
    return [
        *CELERY,
        "worker",
        f"--concurrency={concurrency}",
        loglevel,
        f"--queues={queues}",
        f"--hostname={name}@%h",
        # Worker-to-worker chatter the service does not use; it only adds
        # broker traffic (and files, on the embedded broker).
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]
