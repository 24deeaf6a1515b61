"""A Redis that does not answer is a cache miss, not a 500 on the sign-in page."""

from __future__ import annotations

import pytest
from django.core.cache import caches

pytestmark = pytest.mark.processes

PASSWORD = "correct horse battery"


@pytest.fixture
def redis_cache(settings, redis_server):
    settings.CACHES = {
        "default": {
            "BACKEND": "lib.cache.TolerantRedisCache",
            "LOCATION": f"redis://127.0.0.1:{redis_server.port}/0",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    # Django's setting_changed handler gives the new CACHES fresh connections.
    return caches["default"], redis_server


def test_it_is_a_cache_while_redis_answers(redis_cache):
    cache, _ = redis_cache

    cache.set("k", [1, 2], 60)

    assert cache.get("k") == [1, 2]
    assert cache.add("n", 1, 60) is True
    assert cache.incr("n") == 2


def test_a_stopped_redis_reads_as_a_miss_and_writes_are_skipped(redis_cache):
    cache, server = redis_cache
    cache.set("k", "v", 60)
    server.stop()

    assert cache.get("k") is None
    assert cache.get("k", "fallback") == "fallback"
    assert cache.get("k", default=[]) == []
    assert cache.set("k", "w", 60) is None
    assert cache.add("k", "w", 60) is True  # allauth's lock: not a lock-out
    assert cache.get_many(["k"]) == {}
    assert cache.delete("k") is False


def test_the_sign_in_page_answers_while_redis_is_down(client, assigner, redis_cache):
    _, server = redis_cache
    server.stop()

    response = client.post(
        "/accounts/login/", {"login": "lead@example.com", "password": "a wrong guess"}
    )

    assert response.status_code == 200  # the form again, with its error; not a 500
    assert "password" in response.content.decode().lower()
