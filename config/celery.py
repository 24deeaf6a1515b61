"""The Celery application. Tasks are thin: they take a row id and call a service.

Configuration is Django's CELERY_* settings (config/settings.py): Redis from
REDIS_URL, else the embedded filesystem broker under VAR_DIR; late acks,
requeue on a lost worker, prefetch one, bounded publishes and time limits;
workers on the default queue run the outbox relay (relay/listener.py, a
thread); beat runs the outbox sweep (relay.tasks.sweep) and the reminders
(notifications.tasks.remind); each app's tasks.py is autodiscovered.

Run: `python manage.py run_worker` (the workers and beat, supervised), or, with Redis
and several workers, `celery -A config worker` processes plus one
`celery -A config beat`.
"""

import os
import sys
from typing import Any

import click
from celery import Celery, bootsteps, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_init.connect
@signals.beat_init.connect
def _refuse_unsafe_start(**kwargs) -> None:
    """A worker or beat with unsafe production settings does not start
    (the errors of `manage.py check --deploy`, config/checks.py). Celery logs
    and ignores an exception from a signal handler, so this exits."""
    from django.core.exceptions import ImproperlyConfigured

    from config.checks import refuse_unsafe_start

    try:
        refuse_unsafe_start()
    except ImproperlyConfigured as exc:
        sys.stderr.write(f"ImproperlyConfigured: {exc}\n")
        raise SystemExit(1) from exc


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def _redact_secrets_in_worker_logs(logger, **kwargs) -> None:
    """Celery installs its own log handlers in workers and beat; they get the
    same secret-redacting filter as Django's (settings.LOGGING), the request
    id of the task running (lib.logs), and with LOG_JSON the JSON lines."""
    from django.conf import settings

    from lib.logs import JsonFormatter, RequestIdFilter
    from lib.redact import RedactSecretsFilter

    for handler in logger.handlers:
        if not any(isinstance(f, RedactSecretsFilter) for f in handler.filters):
            handler.addFilter(RedactSecretsFilter())
        if not any(isinstance(f, RequestIdFilter) for f in handler.filters):
            handler.addFilter(RequestIdFilter())
        if settings.LOG_JSON:
            handler.setFormatter(JsonFormatter())


# --- The request id travels with the work it caused (lib.logs) ---------------------

REQUEST_ID_HEADER = "request_id"


@signals.before_task_publish.connect
def _send_the_request_id(headers=None, **kwargs) -> None:
    """A task queued while serving a request (or running a task that one
    queued) carries that request's id in its message headers."""
    from lib.logs import request_id_var

    request_id = request_id_var.get()
    if request_id and headers is not None:
        headers.setdefault(REQUEST_ID_HEADER, request_id)


@signals.task_prerun.connect
def _take_the_request_id(task_id=None, task=None, **kwargs) -> None:
    from lib.logs import request_id_var, sane_request_id, task_var

    request_id = sane_request_id(getattr(task.request, REQUEST_ID_HEADER, None))
    request_id_var.set(request_id)
    task_var.set((task.name, task_id))


@signals.task_postrun.connect
def _drop_the_request_id(**kwargs) -> None:
    from lib.logs import request_id_var, task_var

    request_id_var.set(None)
    task_var.set(None)


@signals.task_prerun.connect
@signals.task_postrun.connect
def _connections_as_a_request_leaves_them(sender=None, **kwargs) -> None:
    """Before and after each task a worker runs, as Django does around each
    request: this thread's database connection closed if it is unusable or
    older than CONN_MAX_AGE, kept otherwise (CELERY_DB_REUSE_MAX keeps
    Celery's fixup from closing it every time). Not for a task run eagerly,
    inside its caller's transaction."""
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


# --- Readiness heartbeats (config/health.py, /readyz) ------------------------------

_heartbeat = None


@signals.worker_ready.connect
def _start_heartbeat(sender=None, **kwargs) -> None:
    """With Redis, a worker says which queues it consumes, for /readyz."""
    global _heartbeat
    from django.conf import settings

    from config.health import Heartbeat

    if not settings.REDIS_URL or sender is None:
        return
    queues = [queue.name for queue in sender.task_consumer.queues]
    _heartbeat = Heartbeat(sender.hostname, queues).start()


@signals.worker_shutdown.connect
def _stop_heartbeat(**kwargs) -> None:
    if _heartbeat is not None:
        _heartbeat.stop()


# --- The outbox relay (relay/listener.py) ------------------------------------------


@signals.worker_ready.connect
def _start_relay(sender=None, **kwargs) -> None:
    """Every worker that consumes the default queue (where the relay's
    `dispatch_event` goes) runs the relay too: each outbox event queued as its
    transaction commits. Several relays share the work (each takes its events
    with SKIP LOCKED), and no other process is needed for it."""
    from celery import current_app

    from relay import listener

    if sender is None:
        return
    default = current_app.conf.task_default_queue
    if any(queue.name == default for queue in sender.task_consumer.queues):
        listener.start()


@signals.worker_shutdown.connect
def _stop_relay(**kwargs) -> None:
    from relay import listener

    listener.stop()


# --- Beat as a thread of a worker (run_worker) -------------------------------------


class _BeatThread(bootsteps.StartStopStep):
    """`celery worker --beat-thread=<schedule file>`: beat (the sweep and the
    reminders) runs as a thread of this worker, not as a process of its
    own: `manage.py run_worker` starts one worker with it, which spares a
    whole process of the application. Run it in one worker only (it is the
    one scheduler); `celery beat` does the same as a process."""

    def __init__(self, parent, beat_thread: str | None = None, **options) -> None:
        self.schedule = beat_thread
        self.service: Any = None
        super().__init__(parent, **options)

    def start(self, parent) -> None:
        if not self.schedule:
            return
        from celery.beat import EmbeddedService

        self.service = EmbeddedService(parent.app, thread=True, schedule_filename=self.schedule)
        self.service.start()

    def stop(self, parent) -> None:
        if self.service is not None:
            self.service.stop()


app.user_options["worker"].add(
    click.Option(
        ("--beat-thread",),
        default=None,
        help="Run beat as a thread of this worker, with this schedule file.",
    )
)
app.steps["worker"].add(_BeatThread)
