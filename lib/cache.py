"""Django's Redis cache, except that a Redis that does not answer is a miss.

The shared cache holds allauth's sign-in, sign-up and reset counts. With
Django's own backend a Redis outage raises on every read, so the sign-in page
answers 500 exactly when people most need it. Here a failed read returns the
default, a failed write is skipped and a failed `add` reports success (logged):
while Redis is away the limits count nothing and lock nobody out, as the
API's token bucket does (ratelimits.buckets), and everything else works.
The socket timeouts (settings) bound the wait.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

# Method -> what it answers when Redis does not (get: the caller's default).
# `add` answers True: allauth takes a lock with it before counting, and a lock
# never granted would refuse every sign-in (429) for as long as Redis is away.
_FALLBACKS: dict[str, Any] = {
    "add": True,
    "get": None,
    "set": None,
    "touch": False,
    "delete": False,
    "get_many": {},
    "has_key": False,
    "set_many": [],
    "delete_many": None,
    "clear": False,
}


def _tolerant(name: str, fallback: Any) -> Callable[..., Any]:
    method = getattr(RedisCache, name)

    @functools.wraps(method)
    def call(self: RedisCache, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except RedisError as exc:
            log.warning("Cache %s skipped: Redis did not answer (%s).", name, type(exc).__name__)
            if name == "get":
                return kwargs.get("default", args[1] if len(args) > 1 else None)
            return fallback

    return call


class TolerantRedisCache(RedisCache):
    pass


for _name, _fallback in _FALLBACKS.items():
    setattr(TolerantRedisCache, _name, _tolerant(_name, _fallback))
