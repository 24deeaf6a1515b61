"""Token buckets shared by every process: `take(key, burst, per_second)`.

A bucket holds up to `burst` tokens and refills at `per_second` tokens a
second; each call takes one token, or is refused with the whole seconds to
wait until one is there. The state lives where every web process sees it,
and each take is one atomic step there, so two processes (or two hosts)
never both spend the last token:

- with REDIS_URL, a Lua script (one Redis command, which Redis runs alone)
  on a hash under `ratelimit:<key>` that expires once it would be full again;
- otherwise a `Bucket` row, read with `SELECT ... FOR UPDATE` and written in
  the same transaction (on SQLite every write transaction begins IMMEDIATE,
  which serialises writers the same way).

The clock is the web process's (`time.time()`), passed in, so tests can
move it. A Redis that does not answer lets the request through (logged): a
limit is a guard, and a broker or cache failure never fails a request here.
"""

from __future__ import annotations

import logging
import math
import time

from django.conf import settings
from django.db import IntegrityError, transaction

from ratelimits.models import Bucket

log = logging.getLogger(__name__)

REDIS_PREFIX = "ratelimit:"

# KEYS[1]: the bucket; ARGV: burst, tokens per second, now (s).
# Returns {allowed (0/1), seconds to wait (string)}.
TAKE_SCRIPT = """
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
if tokens >= 1 then
  tokens = tokens - 1
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
  redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
  return {1, '0'}
end
return {0, tostring((1 - tokens) / rate)}
"""

_scripts: dict[str, object] = {}


def take(key: str, burst: int, per_second: float, *, now: float | None = None) -> tuple[bool, int]:
    """Take one token from bucket `key` (created full). Returns (allowed,
    retry_after): retry_after is 0 when allowed, else the whole seconds (at
    least 1) until a token is there."""
    if burst < 1 or per_second <= 0:
        raise ValueError("A bucket needs a burst of at least 1 and a positive rate.")
    now = time.time() if now is None else now
    if settings.REDIS_URL:
        allowed, wait = _take_in_redis(key, burst, per_second, now)
    else:
        allowed, wait = _take_in_database(key, burst, per_second, now)
    return allowed, 0 if allowed else max(1, math.ceil(wait))


def _refill(tokens: float, since: float, *, burst: int, per_second: float, now: float) -> float:
    return min(float(burst), tokens + max(0.0, now - since) * per_second)


def _take_in_database(key: str, burst: int, per_second: float, now: float) -> tuple[bool, float]:
    with transaction.atomic():
        row = Bucket.objects.select_for_update().filter(key=key).first()
        if row is None:
            try:
                with transaction.atomic():  # a savepoint: a racing creator may win
                    Bucket.objects.create(key=key, tokens=burst - 1, updated_at=now)
                return True, 0.0
            except IntegrityError:
                # Created meanwhile by another process, whose transaction has
                # committed (the INSERT waited for it): lock that row.
                row = Bucket.objects.select_for_update().get(key=key)
        tokens = _refill(row.tokens, row.updated_at, burst=burst, per_second=per_second, now=now)
        if tokens < 1:
            return False, (1 - tokens) / per_second
        later = max(now, row.updated_at)
        Bucket.objects.filter(key=key).update(tokens=tokens - 1, updated_at=later)
        return True, 0.0


def _redis_script(url: str):
    script = _scripts.get(url)
    if script is None:
        import redis

        client = redis.Redis.from_url(
            url,
            socket_connect_timeout=settings.BROKER_TIMEOUT,
            socket_timeout=settings.BROKER_TIMEOUT,
        )
        script = _scripts[url] = client.register_script(TAKE_SCRIPT)
    return script


def _take_in_redis(key: str, burst: int, per_second: float, now: float) -> tuple[bool, float]:
    try:
        allowed, wait = _redis_script(settings.REDIS_URL)(
            keys=[REDIS_PREFIX + key], args=[burst, repr(float(per_second)), repr(now)]
        )
    except Exception:
        log.warning("Rate limit %s not checked: Redis did not answer.", key, exc_info=True)
        return True, 0.0
    return bool(int(allowed)), float(wait)
