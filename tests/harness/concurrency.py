"""Helpers shared across the test apps."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from django.db import connections

T = TypeVar("T")


def race(calls: list[Callable[[], T]], *, timeout: float = 60) -> list[T]:
    """Run `calls` in threads released at the same instant, each on its own
    database connection, and return their results (in completion order).

    An exception in a thread fails the test with that exception; a call that
    expects to lose the race should catch its error and return it as a value.
    """
    barrier = threading.Barrier(len(calls))
    results: list[T] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run(call: Callable[[], T]) -> None:
        try:
            barrier.wait(timeout=timeout)
            result = call()
            with lock:
                results.append(result)
        except BaseException as exc:
            with lock:
                errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    if errors:
        raise errors[0]
    assert len(results) == len(calls), "a racing call did not finish in time"
    return results


def wait_for(condition: Callable[[], object], timeout: float = 10.0) -> bool:
    """Whether `condition()` came true within `timeout` s (looked at every 20 ms)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())
