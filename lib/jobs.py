"""Queue background jobs by name.

Apps hand work to the workers through here, naming the task, so no app
imports the module that defines the tasks (and the tasks module can import
the apps' services without a cycle). Celery carries only row ids: the rows
are the truth, and a periodic sweep queues again whatever a lost publish
left behind, so a publish may fail and is only logged.
"""

from __future__ import annotations

import logging

from celery import current_app

log = logging.getLogger(__name__)


def enqueue(task_name: str, arg: int | str, *, retry: bool = True) -> bool:
    """Queue `task_name(arg)`; False when the broker did not take it. Never
    raises. The publish is bounded (BROKER_TIMEOUT and the publish retry
    policy); `retry=False` tries once, for requests that must not wait on a
    broker that does not answer."""
    try:
        current_app.send_task(task_name, args=[arg], retry=retry)
    except Exception:
        log.warning(
            "Could not queue %s(%s); the sweep will pick it up.", task_name, arg, exc_info=True
        )
        return False
    return True
