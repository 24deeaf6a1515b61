"""allauth's sign-in limit holds across web processes: 20 failed sign-ins for
one address, spread round-robin over three gunicorn processes, are limited
after the 5th, as they would be by one process. Each process kept its own
in-memory count before the cache was shared, and let 15 through.

Real servers on loopback ports, against the shared cache: Redis and
PostgreSQL as in production, and the embedded default (SQLite and the
database cache, no services)."""

from __future__ import annotations

import re
import subprocess
import sys
from contextlib import ExitStack
from functools import partial
from pathlib import Path

import httpx
import pytest

from tests.harness.services import (
    Process,
    free_port,
    manage,
    run_python,
    subprocess_env,
    wait_until,
)

pytestmark = pytest.mark.processes

EMAIL = "lead@example.com"
PASSWORD = "correct horse battery"
LIMITED = "Too many failed login attempts"


def web_process(env: dict[str, str], port: int, log: Path) -> Process:
    return Process(
        [
            *(sys.executable, "-m", "gunicorn", "config.wsgi:application"),
            *("--bind", f"127.0.0.1:{port}", "--workers", "1", "--access-logfile", "-"),
        ],
        env,
        log,
    )


def answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def sign_in_round_robin(ports: list[int], attempts: int, password: str) -> list[bool]:
    """Sign in `attempts` times, each on the next process; whether each was limited.
    Every request names one host, as behind a balancer (allauth's per-address
    count is keyed by the site's domain, which is the Host)."""
    limited = []
    with httpx.Client(timeout=10, headers={"Host": "localhost"}) as client:
        page = client.get(f"http://127.0.0.1:{ports[0]}/accounts/login/")
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert found, "the sign-in page has no CSRF token"
        csrf = found.group(1)
        for n in range(attempts):
            response = client.post(
                f"http://127.0.0.1:{ports[n % len(ports)]}/accounts/login/",
                data={"login": EMAIL, "password": password, "csrfmiddlewaretoken": csrf},
            )
            assert response.status_code in (200, 429), response.text[:500]
            limited.append(LIMITED in response.text or response.status_code == 429)
    return limited


def assert_limited_across(env: dict[str, str], tmp_path: Path) -> None:
    ports = [free_port() for _ in range(3)]
    with ExitStack() as stack:
        for n, port in enumerate(ports):
            stack.enter_context(web_process(env, port, tmp_path / f"web-{n}.log"))
        for port in ports:
            wait_until(partial(answers, port), timeout=60, what=f"gunicorn on {port}")

        limited = sign_in_round_robin(ports, 20, "wrong password")
        # Even the right password is refused now, on every process.
        right = sign_in_round_robin(ports, 3, PASSWORD)

    assert limited == [False] * 5 + [True] * 15
    assert right == [True] * 3


@pytest.mark.postgres
@pytest.mark.redis
def test_failed_sign_ins_are_limited_across_three_processes_with_redis(tmp_path, make_user):
    make_user(EMAIL)
    env = subprocess_env(tmp_path)  # the test's database, REDIS_URL as set

    assert_limited_across(env, tmp_path)


def test_failed_sign_ins_are_limited_across_three_processes_on_the_embedded_default(tmp_path):
    env = subprocess_env(tmp_path, DATABASE_URL=None, REDIS_URL=None)
    subprocess.run(manage("migrate", "--noinput"), env=env, check=True, timeout=180)
    run_python(
        f"from accounts.models import User\nUser.objects.create_user({EMAIL!r}, {PASSWORD!r})\n",
        env,
    )

    assert_limited_across(env, tmp_path)
