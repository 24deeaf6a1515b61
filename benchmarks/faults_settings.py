"""Settings of the fault run's server and worker (benchmarks/faults.py): the
benchmark's (production settings, loopback allowed for the local receivers),
with the relay's clock compressed so a run takes minutes, not hours. The
algorithms are the production ones; only their waits are shorter:

- the sweep every 3 s (production 30 s), a row queued again after 15 s
  (120 s): what Redis lost while it was down is found sooner;
- a task's hard limit 20 s and the lease 30 s (60 s and 120 s; the lease
  still outlasts the limit): a killed worker's send is redone sooner;
- a webhook attempt's timeout 3 s (10 s) and its retries 2, 4, 8, 16, 30
  and 60 s after the previous attempt (5 s, 5 min, 30 min, ...).
"""

from benchmarks.settings import *  # noqa: F403

OUTBOX_SWEEP_INTERVAL = 3
OUTBOX_SWEEP_GRACE = 3
OUTBOX_REQUEUE_AFTER = 15
CELERY_TASK_SOFT_TIME_LIMIT = 15
CELERY_TASK_TIME_LIMIT = 20
DELIVERY_LEASE_SECONDS = 30
WEBHOOK_TIMEOUT = 3
CELERY_BEAT_SCHEDULE = {
    **CELERY_BEAT_SCHEDULE,  # noqa: F405
    "outbox-sweep": {
        "task": "relay.tasks.sweep",
        "schedule": float(OUTBOX_SWEEP_INTERVAL),
        "options": {"expires": float(OUTBOX_SWEEP_INTERVAL)},
    },
}
WEBHOOK_RETRY_SCHEDULE = (2, 4, 8, 16, 30, 60)
