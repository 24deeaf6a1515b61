"""Settings of the worker and web processes that tests start: config.settings,
with the tuning constants (fixed in production, not read from the environment)
taken from the environment here, so a test can make sweeps fast or leases
short."""

import os
from typing import cast

from config.settings import *  # noqa: F403
from config.settings import CELERY_BEAT_SCHEDULE

TUNABLE = (
    "OUTBOX_SWEEP_INTERVAL",
    "OUTBOX_SWEEP_GRACE",
    "OUTBOX_REQUEUE_AFTER",
    "DELIVERY_LEASE_SECONDS",
    "NOTIFY_HTTP_TIMEOUT",
    "NUDGE_CAP_WINDOW",
    "REMINDER_INTERVAL",
    "REMINDER_CAP_WINDOW",
    "WEBHOOK_TIMEOUT",
    "WEBHOOK_RETRY_WINDOW",
    "WORKER_HEARTBEAT_INTERVAL",
    "WORKER_HEARTBEAT_STALE",
)
for _name in TUNABLE:
    if os.environ.get(f"TEST_{_name}"):
        globals()[_name] = int(os.environ[f"TEST_{_name}"])

# Each entry's options are a dict (config.settings); the schedule's type says object.
_sweep = CELERY_BEAT_SCHEDULE["outbox-sweep"]
_sweep["schedule"] = cast(dict, _sweep["options"])["expires"] = float(OUTBOX_SWEEP_INTERVAL)  # noqa: F405
_reminders = CELERY_BEAT_SCHEDULE["reminders"]
_reminders["schedule"] = cast(dict, _reminders["options"])["expires"] = float(REMINDER_INTERVAL)  # noqa: F405

# A clock the test controls: with TEST_CLOCK_FILE set, this process's
# `timezone.now()` is the real time shifted by the seconds written in that
# file (read at every call, so the test moves the clock while the worker
# runs). The shift keeps time flowing, so leases and sweeps behave.
if os.environ.get("TEST_CLOCK_FILE"):
    import datetime as _dt
    from pathlib import Path as _Path

    from django.utils import timezone as _timezone

    _clock_file = _Path(os.environ["TEST_CLOCK_FILE"])
    _real_now = _timezone.now

    def _shifted_now() -> _dt.datetime:
        try:
            shift = float(_clock_file.read_text().strip() or 0)
        except (OSError, ValueError):
            shift = 0.0
        return _real_now() + _dt.timedelta(seconds=shift)

    _timezone.now = _shifted_now
