"""Readiness: what /readyz checks, and the worker heartbeats it reads.

A worker (config/celery.py, on `worker_ready`) writes, every
WORKER_HEARTBEAT_INTERVAL seconds, one entry per queue it consumes into a
sorted set in Redis (`commitments:consumers:<queue>`, member the worker's
name, score the time). /readyz counts a queue's consumers whose last
heartbeat is at most WORKER_HEARTBEAT_STALE seconds old. A worker that exits
cleanly removes its entries; one that dies stops writing and falls out after
WORKER_HEARTBEAT_STALE seconds.

On the embedded default (no REDIS_URL: SQLite and the folder broker of one
machine) there is no Redis to write heartbeats to: readiness is the database
answering, and the answer says the queues are not checked.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

import redis
from django.conf import settings
from django.db import connection

logger = logging.getLogger(__name__)

KEY_PREFIX = "commitments:consumers:"


def _redis() -> redis.Redis:
    return redis.Redis.from_url(
        settings.REDIS_URL,
        socket_connect_timeout=settings.BROKER_TIMEOUT,
        socket_timeout=settings.BROKER_TIMEOUT,
    )


def routed_queues() -> list[str]:
    """Every queue the service sends tasks to: the default queue and those of
    CELERY_TASK_ROUTES."""
    queues = {getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery")}  # Celery's default
    for route in settings.CELERY_TASK_ROUTES.values():
        if isinstance(route, dict) and route.get("queue"):
            queues.add(route["queue"])
    return sorted(queues)


# --- the worker's side ---------------------------------------------------------------


class Heartbeat:
    """A daemon thread in a worker's main process: says, every interval, that
    `hostname` consumes `queues`."""

    def __init__(self, hostname: str, queues: list[str]) -> None:
        self.hostname, self.queues = hostname, sorted(queues)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="readiness-heartbeat", daemon=True)

    def beat(self) -> None:
        client = _redis()
        try:
            now = time.time()
            pipe = client.pipeline(transaction=False)
            for queue in self.queues:
                key = KEY_PREFIX + queue
                pipe.zadd(key, {self.hostname: now})
                pipe.zremrangebyscore(key, "-inf", now - settings.WORKER_HEARTBEAT_STALE)
                pipe.expire(key, settings.WORKER_HEARTBEAT_STALE * 4)
            pipe.execute()
        finally:
            client.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.beat()
            except redis.RedisError as exc:
                # Redis down: the worker is not consuming either; it will be
                # seen again once Redis answers.
                logger.warning("Readiness heartbeat not written: %s", exc)
            self._stop.wait(settings.WORKER_HEARTBEAT_INTERVAL)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        try:
            client = _redis()
            try:
                pipe = client.pipeline(transaction=False)
                for queue in self.queues:
                    pipe.zrem(KEY_PREFIX + queue, self.hostname)
                pipe.execute()
            finally:
                client.close()
        except redis.RedisError:
            pass  # its entries go stale on their own


# --- /readyz's side ------------------------------------------------------------------


@dataclass
class Readiness:
    checks: dict[str, dict[str, object]] = field(default_factory=dict)
    # Why a check failed, for the log only (an exception's text may name
    # hosts and users, which the probe's answer does not show).
    causes: dict[str, str] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return all(check["ok"] for check in self.checks.values())

    def as_json(self) -> dict[str, object]:
        return {"status": "ready" if self.ready else "not ready", "checks": self.checks}

    def log_not_ready(self) -> None:
        """One WARNING line naming every failed check (and its cause), for a
        probe that answered 503; nothing when ready."""
        failed = [
            f"{name}: {str(check.get('error', 'failed')).rstrip('.')}"
            + (f" ({self.causes[name]})" if name in self.causes else "")
            for name, check in self.checks.items()
            if not check["ok"]
        ]
        if failed:
            logger.warning("Not ready: %s.", "; ".join(failed))


def _cause(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _check_database(readiness: Readiness) -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any driver error means: not ready
        readiness.causes["database"] = _cause(exc)
        readiness.checks["database"] = {"ok": False, "error": "The database did not answer."}
        return
    readiness.checks["database"] = {"ok": True}


def _check_redis_and_queues(readiness: Readiness) -> None:
    queues = routed_queues()
    client = _redis()
    try:
        client.ping()
        now = time.time()
        pipe = client.pipeline(transaction=False)
        for queue in queues:
            pipe.zcount(KEY_PREFIX + queue, now - settings.WORKER_HEARTBEAT_STALE, "+inf")
        counts = pipe.execute()
    except redis.RedisError as exc:
        readiness.causes["redis"] = _cause(exc)
        readiness.checks["redis"] = {"ok": False, "error": "Redis did not answer."}
        readiness.checks["queues"] = {"ok": False, "error": "Not checked: Redis did not answer."}
        return
    finally:
        client.close()
    readiness.checks["redis"] = {"ok": True}
    consumers = dict(zip(queues, counts, strict=True))
    missing = [queue for queue, count in consumers.items() if not count]
    check: dict[str, object] = {"ok": not missing, "consumers": consumers}
    if missing:
        check["error"] = (
            "No live worker consumes "
            + ", ".join(f"the queue {queue!r}" for queue in missing)
            + (
                f" (start one: `celery -A config worker -Q {','.join(missing)}`,"
                " or `manage.py run_worker`)."
            )
        )
    readiness.checks["queues"] = check


def readiness() -> Readiness:
    result = Readiness()
    _check_database(result)
    if settings.REDIS_URL:
        _check_redis_and_queues(result)
    else:
        result.checks["queues"] = {
            "ok": True,
            "checked": False,
            "note": (
                "The embedded default (no REDIS_URL): work waits in the folder broker "
                "and the outbox until `manage.py run_worker` takes it; workers are not "
                "tracked, so readiness is the database answering."
            ),
        }
    return result
