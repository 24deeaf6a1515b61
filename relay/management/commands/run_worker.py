"""Run the background workers: a Celery worker for the nudges and the outbox
(with the beat scheduler, the outbox sweep, inside it), and a second worker
process for the outbound webhooks' queue (settings.WEBHOOK_QUEUE).

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
import subprocess
import sys
from pathlib import Path

from celery import current_app
from django.conf import settings
from django.core.management.base import BaseCommand

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
        name = "webhooks" if queues == settings.WEBHOOK_QUEUE else "celery"
        argv = [
            "worker",
            f"--concurrency={options['concurrency']}",
            f"--loglevel={options['loglevel']}",
            f"--queues={queues}",
            f"--hostname={name}@%h",
            # Worker-to-worker chatter the service does not use; it only adds
            # broker traffic (and files, on the embedded broker).
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
        if not options["no_beat"]:
            schedule = Path(settings.CELERY_BEAT_SCHEDULE_FILENAME)
            schedule.parent.mkdir(parents=True, exist_ok=True)
            argv += ["--beat", f"--schedule={schedule}"]
        broker = "Redis" if settings.REDIS_URL else "the embedded broker in VAR_DIR"
        child = None
        if options["webhook_concurrency"] > 0 and queues != settings.WEBHOOK_QUEUE:
            child = subprocess.Popen(  # noqa: S603 (our own command)
                [
                    sys.executable,
                    str(Path(settings.BASE_DIR) / "manage.py"),
                    "run_worker",
                    f"--queues={settings.WEBHOOK_QUEUE}",
                    f"--concurrency={options['webhook_concurrency']}",
                    "--webhook-concurrency=0",
                    f"--loglevel={options['loglevel']}",
                    "--no-beat",
                ],
                preexec_fn=_die_with_parent,
            )
        self.stdout.write(f"Starting the background worker ({queues}) on {broker}.")
        try:
            current_app.worker_main(argv)
        finally:
            if child is not None:
                child.terminate()
                try:
                    child.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    child.kill()
