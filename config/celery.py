"""The Celery application. Tasks are thin: they take a row id and call a service.

Configuration is Django's CELERY_* settings (config/settings.py): Redis from
REDIS_URL, else the embedded filesystem broker under VAR_DIR; late acks,
requeue on a lost worker, prefetch one, bounded publishes and time limits;
beat runs the outbox sweep (delivery.tasks.sweep).

Run: `python manage.py run_worker` (a worker with beat inside), or, with Redis
and several workers, `celery -A config worker` processes plus one
`celery -A config beat`.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
