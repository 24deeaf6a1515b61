"""The token bucket every limit uses: `take(key, burst, per_second)`, kept in
Redis when REDIS_URL is set and in the database otherwise; both are atomic
across processes."""

from __future__ import annotations

import os
import threading

import pytest
from django.db import connection

from ratelimits.buckets import take
from ratelimits.models import Bucket

NOW = 1_800_000_000.0


@pytest.fixture(params=["database", pytest.param("redis", marks=pytest.mark.redis)])
def backend(request, settings, db):
    """Where the buckets live: the database (no REDIS_URL) or Redis."""
    settings.REDIS_URL = os.environ.get("REDIS_URL", "") if request.param == "redis" else ""
    return request.param


def test_a_full_bucket_allows_its_burst_then_says_when_to_come_back(backend):
    # 3 at once, then one token every 10 s.
    results = [take("t:1", burst=3, per_second=0.1, now=NOW) for _ in range(4)]

    assert results == [(True, 0), (True, 0), (True, 0), (False, 10)]


def test_the_wait_is_rounded_up_to_whole_seconds(backend):
    assert take("t:1", burst=1, per_second=0.3, now=NOW) == (True, 0)
    # One token takes 3.33 s to come back; 1 s later 2.33 s remain.
    assert take("t:1", burst=1, per_second=0.3, now=NOW + 1) == (False, 3)


def test_the_bucket_refills_at_its_rate_up_to_the_burst(backend):
    for _ in range(2):
        take("t:1", burst=2, per_second=1, now=NOW)
    assert take("t:1", burst=2, per_second=1, now=NOW)[0] is False
    assert take("t:1", burst=2, per_second=1, now=NOW + 1)[0] is True  # one came back
    assert take("t:1", burst=2, per_second=1, now=NOW + 1)[0] is False
    # A long pause fills it to the burst, not beyond.
    later = NOW + 3600
    assert [take("t:1", burst=2, per_second=1, now=later)[0] for _ in range(3)] == [
        True,
        True,
        False,
    ]


def test_a_refused_call_spends_nothing(backend):
    take("t:1", burst=1, per_second=1, now=NOW)
    for _ in range(5):
        assert take("t:1", burst=1, per_second=1, now=NOW + 0.5) == (False, 1)
    assert take("t:1", burst=1, per_second=1, now=NOW + 1) == (True, 0)


def test_buckets_are_independent(backend):
    assert take("t:1", burst=1, per_second=1, now=NOW)[0] is True
    assert take("t:1", burst=1, per_second=1, now=NOW)[0] is False
    assert take("t:2", burst=1, per_second=1, now=NOW)[0] is True


def test_the_database_keeps_one_row_per_bucket(settings, db):
    settings.REDIS_URL = ""
    for _ in range(3):
        take("t:1", burst=5, per_second=1, now=NOW)
    (row,) = Bucket.objects.all()
    assert row.key == "t:1"
    assert row.tokens == pytest.approx(2)


def test_a_bucket_needs_a_burst_and_a_rate(db):
    with pytest.raises(ValueError):
        take("t:1", burst=0, per_second=1)
    with pytest.raises(ValueError):
        take("t:1", burst=1, per_second=0)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("where", ["database", pytest.param("redis", marks=pytest.mark.redis)])
def test_concurrent_takes_never_spend_more_than_the_burst(settings, where):
    """20 threads, each with its own database connection, race for 5 tokens."""
    if where == "database" and connection.vendor != "postgresql":
        pytest.skip("threads on SQLite's in-memory test database; see the process test")
    settings.REDIS_URL = os.environ.get("REDIS_URL", "") if where == "redis" else ""
    start = threading.Barrier(20)
    results: list[bool] = []

    def racer() -> None:
        try:
            start.wait()
            results.append(take("race", burst=5, per_second=0.001, now=NOW)[0])
        finally:
            connection.close()

    threads = [threading.Thread(target=racer) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(results) == 20
    assert results.count(True) == 5


@pytest.mark.processes
def test_processes_taking_at_once_on_sqlite_never_spend_more_than_the_burst(tmp_path):
    """The embedded default: four processes, one SQLite file, 40 takes at
    once from a bucket of 15 (IMMEDIATE transactions serialise them)."""
    import subprocess
    import sys

    from tests.harness.services import ROOT, manage, subprocess_env

    env = subprocess_env(tmp_path, DATABASE_URL=None, REDIS_URL=None)
    subprocess.run(manage("migrate", "--noinput"), env=env, check=True, timeout=180)
    go = tmp_path / "go"
    code = f"""
import os, time, django
django.setup()
from ratelimits.buckets import take
while not os.path.exists({str(go)!r}):
    time.sleep(0.01)
print(sum(take("race", burst=15, per_second=0.001, now={NOW})[0] for _ in range(10)))
"""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    go.touch()
    allowed = [int(p.communicate(timeout=120)[0]) for p in procs]

    assert sum(allowed) == 15


def test_a_redis_that_does_not_answer_lets_the_call_through(settings, db, caplog):
    from tests.harness.services import free_port

    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there

    assert take("t:1", burst=1, per_second=1, now=NOW) == (True, 0)
    assert take("t:1", burst=1, per_second=1, now=NOW) == (True, 0)
    assert "Rate limit t:1 not checked: Redis did not answer." in caplog.text
