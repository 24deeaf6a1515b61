"""Settings of the several-hosts run (benchmarks/hosts.py): the fault run's
(benchmarks/faults_settings.py: production's algorithms with the relay's
clock compressed), plus reminders every 5 s (production: 300 s), so that
reminders made before and after beat moves host are seen within the run.
"""

from benchmarks.faults_settings import *  # noqa: F403

REMINDER_INTERVAL = 5
CELERY_BEAT_SCHEDULE = {
    **CELERY_BEAT_SCHEDULE,  # noqa: F405
    "reminders": {
        "task": "notifications.tasks.remind",
        "schedule": float(REMINDER_INTERVAL),
        "options": {"expires": float(REMINDER_INTERVAL)},
    },
}
