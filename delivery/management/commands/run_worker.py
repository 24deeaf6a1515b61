"""Run the background worker: a Celery worker with the beat scheduler (the
outbox sweep) inside it.

With REDIS_URL unset this is the embedded default: the broker is a folder
under VAR_DIR that web and worker share, so `manage.py runserver` plus
`manage.py run_worker` deliver nudges with no other service. With Redis, run
one process with beat (this command) or, for more workers, `celery -A config
worker` processes plus a single `celery -A config beat`.
"""

from __future__ import annotations

from pathlib import Path

from celery import current_app
from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run a Celery worker with the outbox sweep (beat) embedded."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--concurrency", type=int, default=2, help="Worker processes (default 2)."
        )
        parser.add_argument("--loglevel", default="INFO")
        parser.add_argument(
            "--no-beat",
            action="store_true",
            help="Do not run the sweep here (another process runs beat).",
        )

    def handle(self, *args, **options) -> None:
        argv = [
            "worker",
            f"--concurrency={options['concurrency']}",
            f"--loglevel={options['loglevel']}",
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
        self.stdout.write(f"Starting the background worker on {broker}.")
        current_app.worker_main(argv)
