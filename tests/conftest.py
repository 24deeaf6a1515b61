"""Shared fixtures. Tests use the database named by DATABASE_URL (PostgreSQL in
CI) and fall back to SQLite; tests marked `postgres` or `redis` need the real
service and are skipped without it, unless REQUIRE_SERVICES=1 (CI), where a
missing service fails the run instead of quietly skipping."""

from __future__ import annotations

import os

import pytest
from django.db import connection

from tests.harness.services import REQUIRE_SERVICES


def pytest_configure(config):
    # xdist workers would share the one Redis database (its keys are emptied
    # before each test, its queues purged): with REDIS_URL, one process.
    if os.environ.get("REDIS_URL") and getattr(config.option, "numprocesses", None):
        raise pytest.UsageError(
            "With REDIS_URL the tests share one Redis database: run them in one "
            "process (-n 0), as ./scripts/test does (docs/testing.md)."
        )


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(pytest.mark.django_db(transaction=True))


@pytest.fixture(scope="session")
def _sqlite_template(django_db_use_migrations):
    """The migrated SQLite database this run may start from (None: not on
    SQLite in memory, or run without migrations); tests/harness/sqlite_template.py."""
    from tests.harness import sqlite_template

    if not django_db_use_migrations or not sqlite_template.in_memory_sqlite():
        return None
    template = sqlite_template.template_path()
    sqlite_template.use(template)
    return template


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings, _sqlite_template):
    """pytest-django's, then, on SQLite in memory, the migrated template copied
    into the test database before pytest-django migrates it (nothing left to
    apply then). The copy's connection keeps the database alive until the end."""
    from tests.harness import sqlite_template

    keeper = sqlite_template.preload(_sqlite_template) if _sqlite_template else None
    yield
    if keeper is not None:
        keeper.close()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, _sqlite_template):
    """pytest-django's set-up, then, when this run built the SQLite database
    from the migrations, that database kept as the template for the next runs
    (before any test writes to it)."""
    from tests.harness import sqlite_template

    if _sqlite_template and not _sqlite_template.exists():
        sqlite_template.save(_sqlite_template)


@pytest.fixture(scope="session", autouse=True)
def _transactional_tests_restore_the_template(_sqlite_template, django_db_blocker):
    """After a transactional test (live server, `transaction=True`), Django
    flushes every table and makes the content types and permissions again;
    on SQLite in memory, the migrated template copied back gives the same
    rows (and the migrated schema, whatever a migration test left) for a
    fraction of the CPU. Not for a test that flushes only some apps or
    restores serialized rows, nor where the copy finds the database busy."""
    from django.test import TransactionTestCase

    from tests.harness import sqlite_template

    if _sqlite_template is None:
        yield
        return
    flush = TransactionTestCase._fixture_teardown

    def teardown(self):
        plain = self.available_apps is None and not self.serialized_rollback
        if not (plain and _sqlite_template.exists() and sqlite_template.restore(_sqlite_template)):
            flush(self)

    TransactionTestCase._fixture_teardown = teardown
    try:
        yield
    finally:
        TransactionTestCase._fixture_teardown = flush


@pytest.fixture(autouse=True)
def _require_services(request):
    if request.node.get_closest_marker("postgres") and connection.vendor != "postgresql":
        if REQUIRE_SERVICES:
            pytest.fail("This test needs PostgreSQL: set DATABASE_URL.")
        pytest.skip("needs PostgreSQL (set DATABASE_URL)")
    if request.node.get_closest_marker("redis") and not os.environ.get("REDIS_URL"):
        if REQUIRE_SERVICES:
            pytest.fail("This test needs Redis: set REDIS_URL.")
        pytest.skip("needs Redis (set REDIS_URL)")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # The production hasher is slow on purpose; tests only need a real one.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def make_user(db, django_user_model):
    """Makes users whose address is verified (their primary address, as after
    typing the code allauth mails), so they sign in and receive commitments and
    nudges. `verified=False` makes one who has not proved the address yet."""
    from accounts.services import user_email_mark_verified

    counter = iter(range(1, 10_000))

    def make(email: str | None = None, *, verified: bool = True, **extra):
        email = email or f"person{next(counter)}@example.com"
        user = django_user_model.objects.create_user(email, "correct horse battery", **extra)
        if verified:
            user_email_mark_verified(user=user)
        return user

    return make


@pytest.fixture
def assigner(make_user):
    return make_user("lead@example.com", display_name="Lead")


@pytest.fixture
def assignee(make_user):
    return make_user("knight@example.com", display_name="Knight")


@pytest.fixture
def outsider(make_user):
    return make_user("outsider@example.com")


@pytest.fixture
def staff(make_user):
    return make_user("staff@example.com", is_staff=True, is_superuser=True)


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


@pytest.fixture
def redis_server(tmp_path):
    """A Redis server of this test's own (a RedisServer: its port, stop, start),
    to pause, stop or restart without disturbing others."""
    from tests.harness.services import RedisServer, free_port, redis_server_available

    if not redis_server_available():
        if REQUIRE_SERVICES:
            pytest.fail("redis-server and redis-cli are needed on PATH")
        pytest.skip("redis-server is not installed")
    server = RedisServer(free_port(), tmp_path).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def private_redis(redis_server):
    """The port of a Redis server of this test's own."""
    return redis_server.port


@pytest.fixture(autouse=True)
def _fresh_limits():
    """Every test starts with no rate limit spent. The database cache and
    buckets go with the test's transaction or flush; with REDIS_URL the cache
    (`cache:*`) and the buckets (`ratelimit:*`) live in Redis, across tests
    and runs, so they are deleted here (not FLUSHDB: the broker's keys stay)."""
    url = os.environ.get("REDIS_URL")
    if url:
        import redis

        client = redis.Redis.from_url(url, socket_timeout=5)
        try:
            for pattern in ("cache:*", "ratelimit:*"):
                keys = list(client.scan_iter(match=pattern, count=1000))
                if keys:
                    client.delete(*keys)
        except redis.RedisError:
            pass  # no Redis: the tests that need it say so
        finally:
            client.close()
    yield


@pytest.fixture
def published(monkeypatch):
    """What would have gone to the broker, instead of going: (task, row id) pairs."""
    from lib import jobs

    sent: list[tuple[str, str]] = []

    def record(task, row_id, *, retry=True):
        sent.append((task.name.rsplit(".", 1)[-1], str(row_id)))
        return True

    monkeypatch.setattr(jobs, "enqueue", record)
    return sent


@pytest.fixture
def queued(monkeypatch):
    """The broker, without a broker: what the code under test queued, as
    (task, argument) pairs, in order; a test runs them as a worker would."""
    from lib import jobs

    jobs_queued: list[tuple[str, str]] = []

    def record(task_name, arg, *, retry=True):
        jobs_queued.append((task_name, str(arg)))
        return True

    monkeypatch.setattr(jobs, "enqueue", record)
    return jobs_queued
