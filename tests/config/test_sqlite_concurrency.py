"""The embedded default (SQLite, no DATABASE_URL) under concurrency: the web
process and the worker write at once and no request is lost to "database is
locked". These tests run on SQLite whatever database the suite uses: the
processes they start get no DATABASE_URL."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.harness.services import (
    Process,
    free_port,
    manage,
    read_mails,
    run_python,
    subprocess_env,
    wait_until,
)

pytestmark = pytest.mark.processes

PASSWORD = "a long passphrase for tests"
CALLS = 20


def embedded_env(tmp_path: Path) -> dict[str, str]:
    return subprocess_env(tmp_path, DATABASE_URL=None, REDIS_URL=None)


def run(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


def sqlite_settings_report(env: dict[str, str]) -> dict:
    """What a connection of a process on the embedded default really runs with."""
    done = run_python(
        """
import json
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
with connection.cursor() as cursor:
    journal = cursor.execute("PRAGMA journal_mode").fetchone()[0]
    busy = cursor.execute("PRAGMA busy_timeout").fetchone()[0]
    synchronous = cursor.execute("PRAGMA synchronous").fetchone()[0]
with CaptureQueriesContext(connection) as queries, transaction.atomic():
    connection.cursor().execute("SELECT 1")
print(json.dumps({"vendor": connection.vendor, "journal_mode": journal,
                  "busy_timeout": busy, "synchronous": synchronous,
                  "begin": queries.captured_queries[0]["sql"]}))
""",
        env,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_embedded_database_runs_in_wal_mode_with_immediate_transactions_and_a_busy_timeout(
    tmp_path,
):
    env = embedded_env(tmp_path)
    run(manage("migrate", "--noinput"), env)

    report = sqlite_settings_report(env)

    assert report == {
        "vendor": "sqlite",
        "journal_mode": "wal",  # readers never wait for a writer, nor a writer for readers
        "busy_timeout": 20_000,  # a writer waits up to 20 s for the lock instead of failing
        "synchronous": 1,  # NORMAL: safe in WAL mode, one fsync per checkpoint
        # A transaction takes the write lock at BEGIN, where the busy timeout
        # applies, never by upgrading a read lock (which fails at once).
        "begin": "BEGIN IMMEDIATE",
    }


def post_inbox(port: int, token: str, n: int) -> tuple[int, str]:
    body = {
        "assignerEmail": "lead@example.com",
        "assigneeEmail": "knight@example.com",
        "description": f"Concurrent request {n}",
        "deadline": "2030-01-01T00:00:00Z",
        "externalSystem": "load",
        "externalId": f"REQ-{n}",
    }
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/inbox",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def test_twenty_concurrent_inbox_calls_while_the_worker_delivers_all_answer_201(tmp_path):
    """`./scripts/serve` as it runs with nothing configured: gunicorn with
    config/gunicorn.py (two preloaded workers) and `run_worker` on SQLite and the folder
    broker. A backlog of nudges keeps the worker writing (claims, deliveries,
    attempts, sweeps every second) while twenty inbox calls arrive at once."""
    env = embedded_env(tmp_path)
    # Thirty requests from one assigner to one assignee in a minute: above the
    # hourly nudge cap, which is not what this test is about.
    env["NUDGE_CAP"] = "1000"
    run(manage("migrate", "--noinput"), env)
    for email in ("lead@example.com", "knight@example.com"):
        run(manage("create_user", email, "--password", PASSWORD), env)
    token = run(manage("mint_token", "lead@example.com", "--name", "load"), env).splitlines()[-1]
    backlog = 10
    run_python(
        f"""
from accounts.models import User
from audit.services import Actor
from commitments import services
lead = User.objects.get(email="lead@example.com")
knight = User.objects.get(email="knight@example.com")
for n in range({backlog}):
    services.commitment_create_pending(
        actor=Actor.for_user(lead), assigner=lead, assignee=knight,
        description=f"Backlog item {{n}}", deadline=None)
""",
        env,
    )
    port = free_port()
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    server_args = [gunicorn, "config.wsgi:application", "--config", "python:config.gunicorn"]
    server_args += ["--bind", f"127.0.0.1:{port}", "--workers", "2"]
    with (
        Process(server_args, env, tmp_path / "web.log") as web,
        Process(manage("run_worker", "--concurrency=2"), env, tmp_path / "worker.log") as worker,
    ):
        web.wait_for_output("Booting worker", timeout=60)
        worker.wait_for_output("ready.", timeout=60)
        # The worker is at work on the backlog when the calls arrive.
        wait_until(lambda: read_mails(tmp_path / "mail"), timeout=60, what="a first nudge")

        with ThreadPoolExecutor(max_workers=CALLS) as pool:
            answers = list(pool.map(lambda n: post_inbox(port, token, n), range(CALLS)))

        assert [status for status, _ in answers] == [201] * CALLS, answers
        mails = wait_until(
            lambda: (m := read_mails(tmp_path / "mail")) and len(m) >= backlog + CALLS and m,
            timeout=120,
            what="every nudge",
        )
    assert len(mails) == backlog + CALLS
    assert "database is locked" not in web.output() + worker.output()
