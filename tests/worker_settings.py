"""Settings of the worker and web processes that tests start: config.settings,
with the tuning constants (fixed in production, not read from the environment)
taken from the environment here, so a test can make sweeps fast or leases
short."""

import os

from config.settings import *  # noqa: F403
from config.settings import CELERY_BEAT_SCHEDULE

TUNABLE = (
    "OUTBOX_SWEEP_INTERVAL",
    "OUTBOX_SWEEP_GRACE",
    "OUTBOX_REQUEUE_AFTER",
    "DELIVERY_LEASE_SECONDS",
    "NOTIFY_HTTP_TIMEOUT",
    "NUDGE_CAP_WINDOW",
    "WEBHOOK_TIMEOUT",
    "WEBHOOK_RETRY_WINDOW",
)
for _name in TUNABLE:
    if os.environ.get(f"TEST_{_name}"):
        globals()[_name] = int(os.environ[f"TEST_{_name}"])

_sweep = CELERY_BEAT_SCHEDULE["outbox-sweep"]
_sweep["schedule"] = _sweep["options"]["expires"] = float(OUTBOX_SWEEP_INTERVAL)  # noqa: F405
