"""Run the background workers: a Celery worker for the outbox and the nudges
(its queues, settings.CELERY_TASK_QUEUES, taken in turn) with beat (the
scheduler of the outbox sweep and the reminders) as a thread of it, and a
second worker for the outbound webhooks' queue (settings.WEBHOOK_QUEUE),
each a child process that a small supervisor (lib/supervise.py) watches: a
child that exits by itself (a crash, a kill, an outage it did not survive)
is started again after a back-off, logged; SIGTERM or SIGINT to this command
stops them all (the workers' warm shutdown) and it exits. A child that could
not start at all (bad settings) stops the others and this command exits
with its code. Once it has worked out its children, this command execs the
supervisor (same process id), which imports neither Django nor the
application: the tree is two worker processes and a light watcher.

Both workers run a pool of threads (settings.CELERY_WORKER_POOL): the sends
wait on PostgreSQL, mail servers and receivers, not on the CPU, and threads
share one copy of the application where each prefork child held its own.

The webhooks get a process of their own because a receiver may take the
whole WEBHOOK_TIMEOUT (10 s) to fail, again and again: on the same pool,
webhook sends would take every slot and a nudge would wait behind them.
Two workers on two queues cannot hold each other up. The first runs at
WORKER_OUTBOX_NICE more niceness (`--outbox-nice`) and, with
WORKER_OUTBOX_IDLE (`--outbox-idle`, the default), under Linux's idle
scheduling policy, so its bulk does not hold the core while a webhook line,
one send at a time, waits for it.

With REDIS_URL unset this is the embedded default: the broker is a folder
under VAR_DIR that web and workers share, so `manage.py runserver` plus
`manage.py run_worker` deliver nudges and webhooks with no other service.
With Redis, run this command, or, for more workers, more of them with
`--no-beat` (one worker each: `--webhook-concurrency=0` for the outbox's and
nudges', `--queues=webhooks` for the webhooks'; compose.yaml runs them so)
and a single `celery -A config beat`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

DEFAULT_QUEUES = ",".join(settings.CELERY_TASK_QUEUES)


class Command(BaseCommand):
    help = "Run the Celery workers (outbox and nudges with the sweep, and webhooks)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--concurrency",
            type=int,
            default=settings.CELERY_WORKER_CONCURRENCY,
            help="Threads (or processes) of the worker "
            f"(default {settings.CELERY_WORKER_CONCURRENCY}).",
        )
        parser.add_argument(
            "--webhook-concurrency",
            type=int,
            default=settings.CELERY_WORKER_CONCURRENCY,
            help="Threads of the webhooks' worker (default "
            f"{settings.CELERY_WORKER_CONCURRENCY}: more than WEBHOOK_USER_IN_FLIGHT, so one "
            "person's slow receivers never hold them all); "
            "0 starts none here (another process consumes the webhooks queue).",
        )
        parser.add_argument(
            "--pool",
            default=settings.CELERY_WORKER_POOL,
            choices=["threads", "prefork", "solo"],
            help=f"The workers' pool (default {settings.CELERY_WORKER_POOL}).",
        )
        parser.add_argument(
            "--queues",
            default=DEFAULT_QUEUES,
            help=f"Queues this worker consumes (default: {DEFAULT_QUEUES}, "
            "the outbox's and the nudges').",
        )
        parser.add_argument(
            "--outbox-nice",
            type=niceness,
            default=settings.WORKER_OUTBOX_NICE,
            help="Added to the CPU niceness of the worker of the outbox and the nudges "
            f"(default {settings.WORKER_OUTBOX_NICE}; 0: the same priority as the webhooks' "
            "worker and the web).",
        )
        parser.add_argument(
            "--outbox-idle",
            action=argparse.BooleanOptionalAction,
            default=settings.WORKER_OUTBOX_IDLE,
            help="Run the worker of the outbox and the nudges under Linux's idle scheduling "
            "policy: the CPU only when nothing else wants it (default "
            f"{'on' if settings.WORKER_OUTBOX_IDLE else 'off'}; --no-outbox-idle: the "
            "niceness alone).",
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
        beat: list[str] = []
        if not options["no_beat"]:
            schedule = Path(settings.CELERY_BEAT_SCHEDULE_FILENAME)
            schedule.parent.mkdir(parents=True, exist_ok=True)
            beat = [f"--beat-thread={schedule}"]  # config/celery.py
        first = "worker of the " + repr(queues) + " queue(s)" + (" with beat" if beat else "")
        children = [
            (
                first,
                [
                    *worker_argv(
                        queues=queues,
                        name="webhooks" if queues == settings.WEBHOOK_QUEUE else "celery",
                        concurrency=options["concurrency"],
                        pool=options["pool"],
                        loglevel=loglevel,
                    ),
                    *beat,
                ],
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
                        pool=options["pool"],
                        loglevel=loglevel,
                    ),
                )
            )
        broker = "Redis" if settings.REDIS_URL else "the embedded broker in VAR_DIR"
        self.stdout.write(
            f"Starting the background workers on {broker}: "
            + ", ".join(name for name, _ in children)
            + "."
        )
        self.stdout.flush()
        # The outbox's and nudges' worker yields the CPU: a bulk of
        # dispatches and nudges on a shared core otherwise holds it while the
        # webhooks' worker, which waits on one receiver at a time, is ready to
        # go on after each answer; under the idle policy it yields at once,
        # not at the end of its slice (docs/benchmarks.md, "The webhook
        # line's turn on the CPU", "The line's wake-ups").
        bulk = [] if queues == settings.WEBHOOK_QUEUE else [first]
        spec = {
            "children": children,
            "nice": {name: options["outbox_nice"] for name in bulk},
            "idle": bulk if options["outbox_idle"] else [],
            # A warm shutdown waits for the tasks running; none runs longer.
            "stop_timeout": settings.CELERY_TASK_TIME_LIMIT + 10,
        }
        # The supervisor in this process's place (same pid, so signals to
        # this command reach it), without Django: lib/supervise.py.
        root = str(settings.BASE_DIR)
        path = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
        os.environ["PYTHONPATH"] = path
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, "-m", "lib.supervise", json.dumps(spec)])  # noqa: S606


def niceness(value: str) -> int:
    """`--outbox-nice`: 0 or more. A process may lower its own priority but
    not raise it without privileges: a negative value would fail each time
    the supervisor starts the worker."""
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value!r}: give a whole number, 0 or more")
    return number


CELERY = [sys.executable, "-m", "celery", "-A", "config"]


def worker_argv(
    *, queues: str, name: str, concurrency: int, loglevel: str, pool: str = "threads"
) -> list[str]:
    return [
        *CELERY,
        "worker",
        f"--pool={pool}",
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
