"""Queue a background job: a Celery task, named by import.

Each app queues its own tasks (`notifications.tasks`, `webhooks.tasks`,
`relay.tasks`), through `lib.deliveries.queue_on_commit` or here. Celery
carries only row ids: the rows are the truth, and a periodic sweep queues
again whatever a lost publish left behind, so a publish may fail and is only
logged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from celery import current_app
from kombu.exceptions import ChannelError

log = logging.getLogger(__name__)


class Task(Protocol):
    """A Celery task, as far as queueing it goes (Celery has no types)."""

    name: str


def enqueue(task: Task, arg: int | str | Sequence[object], *, retry: bool = True) -> bool:
    """Queue `task(arg)` (a Celery task; `arg` a row id, or a list of them
    for a batch task); False when the broker did not take it. Never raises.
    The publish is bounded (BROKER_TIMEOUT and the publish retry policy);
    `retry=False` tries once, for requests that must not wait on a broker
    that does not answer."""
    try:
        current_app.send_task(task.name, args=[arg], retry=retry)
    except Exception:
        log.warning(
            "Could not queue %s(%s); the sweep will pick it up.", task.name, arg, exc_info=True
        )
        return False
    return True


def waiting(task: Task) -> int | None:
    """How many messages wait in the broker's queue that `task` is routed to
    (queued, not yet taken by a worker); None when the broker does not
    answer. Never raises."""
    route = (current_app.conf.task_routes or {}).get(task.name)
    queue = (route or {}).get("queue") if isinstance(route, dict) else None
    try:
        with current_app.connection_or_acquire() as conn:
            declared = conn.default_channel.queue_declare(
                queue=queue or current_app.conf.task_default_queue, passive=True
            )
    except ChannelError:
        return 0  # no such queue yet: nothing was ever left in it
    except Exception:
        log.warning("Could not read the length of %s's queue.", task.name, exc_info=True)
        return None
    return int(declared.message_count)
