"""The Celery application. Tasks are thin: they take a row id and call a service.

Configuration is Django's CELERY_* settings (config/settings.py): Redis from
REDIS_URL, else the embedded filesystem broker under VAR_DIR; late acks,
requeue on a lost worker, prefetch one, bounded publishes and time limits;
beat runs the outbox sweep (relay.tasks.sweep) and the reminders
(notifications.tasks.remind); each app's tasks.py is autodiscovered.

Run: `python manage.py run_worker` (a worker with beat inside), or, with Redis
and several workers, `celery -A config worker` processes plus one
`celery -A config beat`.
"""

import os
import sys

from celery import Celery, signals

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
    same secret-redacting filter as Django's (settings.LOGGING)."""
    from lib.redact import RedactSecretsFilter

    for handler in logger.handlers:
        if not any(isinstance(f, RedactSecretsFilter) for f in handler.filters):
            handler.addFilter(RedactSecretsFilter())
