"""Real Celery workers (subprocesses) against real Redis and PostgreSQL, and
the embedded default (SQLite and the filesystem broker, no services at all).

Each test starts its own worker with beat embedded (the sweep every second),
observes what leaves the machine (mail files, a loopback server playing
Slack), and kills every process it started, whatever happens.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import Commitment
from notifications.models import AttemptOutcome, ChannelKind, NudgeDelivery, NudgeDeliveryStatus
from notifications.services import notification_channel_set
from tests.harness.services import (
    FakeService,
    Process,
    Reply,
    celery_worker,
    manage,
    purge_queue,
    read_mails,
    run_python,
    subprocess_env,
    wait_until,
)

pytestmark = pytest.mark.processes


def create_pending(assigner, assignee, description="Ship the quarterly report"):
    commitment = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description=description,
        deadline=timezone.now() + dt.timedelta(days=3),
    )
    return commitment


def delivered(commitment) -> NudgeDelivery | None:
    return NudgeDelivery.objects.filter(
        event__commitment=commitment, status=NudgeDeliveryStatus.DELIVERED
    ).first()


def sweeps_done(worker: Process) -> int:
    return sum(
        1
        for line in worker.output().splitlines()
        if "relay.tasks.sweep[" in line and "succeeded" in line
    )


def let_sweeps_run(worker: Process, count: int = 2) -> None:
    """Wait for `count` more sweeps, so a duplicate would have had its chance."""
    start = sweeps_done(worker)
    wait_until(lambda: sweeps_done(worker) >= start + count, timeout=20, what="sweeps")


def assert_one_nudge(commitment, mail_dir: Path) -> None:
    assert NudgeDelivery.objects.filter(event__commitment=commitment).count() == 1
    delivery = NudgeDelivery.objects.get(event__commitment=commitment)
    assert delivery.status == NudgeDeliveryStatus.DELIVERED
    assert [a.outcome for a in delivery.attempt_log.all()] == [AttemptOutcome.DELIVERED]
    mails = [m for m in read_mails(mail_dir) if commitment.description in m["Subject"]]
    assert len(mails) == 1
    assert mails[0]["To"] == "knight@example.com"
    assert f"/commitments/{commitment.pk}" in mails[0].get_payload()


@pytest.fixture
def redis_env(tmp_path):
    """A worker environment on the test's Redis, its queue emptied first."""
    purge_queue(os.environ["REDIS_URL"])
    return subprocess_env(tmp_path)


@pytest.mark.postgres
@pytest.mark.redis
def test_a_new_commitment_leads_to_exactly_one_delivered_nudge(
    tmp_path, redis_env, assigner, assignee
):
    # No sweep may dispatch it: only the after-commit publish can.
    redis_env["TEST_OUTBOX_SWEEP_GRACE"] = "3600"
    with celery_worker(redis_env, tmp_path / "worker.log") as worker:
        worker.wait_for_output("ready.")
        commitment = create_pending(assigner, assignee)
        wait_until(lambda: delivered(commitment), what="the nudge")
        let_sweeps_run(worker)
    assert_one_nudge(commitment, tmp_path / "mail")


@pytest.mark.postgres
@pytest.mark.redis
def test_an_inbox_call_leads_to_exactly_one_delivered_nudge(
    tmp_path, redis_env, client, assigner, assignee
):
    from tests.harness.api import INBOX, inbox_body, mint, post_json

    token = mint(assigner)
    # No sweep may dispatch it: only the publish after the request can.
    redis_env["TEST_OUTBOX_SWEEP_GRACE"] = "3600"
    with celery_worker(redis_env, tmp_path / "worker.log") as worker:
        worker.wait_for_output("ready.")
        response = post_json(
            client, INBOX, inbox_body(description="Review the budget"), token=token
        )
        assert response.status_code == 201, response.content
        commitment = Commitment.objects.get(pk=response.json()["id"])
        wait_until(lambda: delivered(commitment), what="the nudge")
        let_sweeps_run(worker)
    assert_one_nudge(commitment, tmp_path / "mail")


def inbox_call_in_a_web_process(env, token: str, description: str, *, before: str = ""):
    """Make an inbox call from a fresh Django process (a stand-in for a web
    process), after running `before` there; the new commitment, what the
    process wrote to stderr, and how long the call took (seconds)."""
    code = f"""
import json, subprocess, time
from django.test import Client

{before}
started = time.monotonic()
response = Client(HTTP_HOST="localhost").post(
    "/api/v1/inbox",
    data=json.dumps({{
        "assignerEmail": "lead@example.com", "assigneeEmail": "knight@example.com",
        "description": {description!r}, "deadline": None,
        "externalSystem": "jira", "externalId": "OPS-7",
    }}),
    content_type="application/json",
    headers={{"Authorization": "Bearer {token}"}},
)
print(response.status_code, response.json()["id"], time.monotonic() - started)
"""
    done = run_python(code, env, timeout=30)
    status, commitment_id, took = done.stdout.split()
    assert status == "201"
    return Commitment.objects.get(pk=commitment_id), done.stderr, float(took)


# A publish to a broker that does not answer gives up after BROKER_TIMEOUT (2 s,
# one try). Celery's default retry policy would try four times (over 8 s), and
# without socket timeouts a paused Redis holds a publish for as long as it is
# paused; this bound tells those apart with room for a loaded machine.
PROMPT = 6.0


@pytest.mark.postgres
@pytest.mark.redis
def test_an_inbox_call_while_redis_is_paused_returns_and_the_nudge_goes_once_it_is_back(
    tmp_path, private_redis, assigner, assignee
):
    from tests.harness.api import mint

    port = private_redis
    env = subprocess_env(tmp_path, REDIS_URL=f"redis://127.0.0.1:{port}/0")
    # The inbox call is made while Redis answers nothing at all.
    pause = (
        f'subprocess.run(["redis-cli", "-p", "{port}", "CLIENT", "PAUSE", "10000", "ALL"],'
        " check=True, stdout=subprocess.DEVNULL)"
    )
    with celery_worker(env, tmp_path / "worker.log") as worker:
        worker.wait_for_output("ready.")
        commitment, stderr, took = inbox_call_in_a_web_process(
            env, mint(assigner), "Written while Redis was paused", before=pause
        )
        # The request does not touch the broker: the relay queues its event.
        assert "Could not queue" not in stderr
        assert took < PROMPT, f"the call took {took:.1f} s"
        # Redis comes back by itself; the relay (or the sweep) queues the event.
        wait_until(lambda: delivered(commitment), timeout=30, what="the nudge")
        let_sweeps_run(worker)
    assert_one_nudge(commitment, tmp_path / "mail")


@pytest.mark.postgres
@pytest.mark.redis
def test_an_inbox_call_while_redis_is_down_returns_and_the_nudge_goes_once_it_is_restarted(
    tmp_path, redis_server, assigner, assignee
):
    from tests.harness.api import mint

    env = subprocess_env(tmp_path, REDIS_URL=f"redis://127.0.0.1:{redis_server.port}/0")
    with celery_worker(env, tmp_path / "worker.log") as worker:
        worker.wait_for_output("ready.")
        redis_server.stop()  # a crash: the worker's connections break
        commitment, stderr, took = inbox_call_in_a_web_process(
            env, mint(assigner), "Written while Redis was down"
        )
        assert "Could not queue" not in stderr  # the request does not touch the broker
        assert took < PROMPT, f"the call took {took:.1f} s"
        time.sleep(2)
        assert not delivered(commitment)  # nothing can carry it yet
        redis_server.start()  # empty: whatever was queued before is gone
        # The worker reconnects; its relay queues the event it could not.
        wait_until(lambda: delivered(commitment), timeout=60, what="the nudge")
        let_sweeps_run(worker)
    assert_one_nudge(commitment, tmp_path / "mail")


@pytest.mark.postgres
def test_a_worker_with_a_send_in_flight_when_redis_goes_survives_and_consumes_once_it_is_back(
    tmp_path, redis_server, assigner, assignee
):
    """Redis stops while a nudge is being sent (its message unacknowledged) and
    the worker has room for another (concurrency 2: its next BRPOP is waiting).
    Before config/broker.py's second fix the worker exited here ("Unrecoverable
    error: AttributeError(... 'hostname')") and nothing was sent until someone
    started it again."""
    from tests.harness.api import mint

    env = subprocess_env(
        tmp_path,
        REDIS_URL=f"redis://127.0.0.1:{redis_server.port}/0",
        TEST_DELIVERY_LEASE_SECONDS="3",
        TEST_NOTIFY_HTTP_TIMEOUT="20",
    )
    token = mint(assigner)
    with FakeService() as slack:
        notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
        held = threading.Event()
        slack.reply_with(Reply(200, "ok", hold=held))  # the first send hangs
        with celery_worker(env, tmp_path / "worker.log", concurrency=2) as worker:
            worker.wait_for_output("ready.")
            first = create_pending(assigner, assignee, "Sent while Redis went")
            slack.wait_for_requests(1)  # in flight
            redis_server.stop()
            worker.wait_for_output("Connection to broker lost")
            redis_server.start()  # empty
            held.set()
            # Queued once Redis is back, straight to it (as a web process does).
            second, _, _ = inbox_call_in_a_web_process(env, token, "Queued after Redis came back")

            def both_delivered() -> bool:
                assert worker.proc.poll() is None, "the worker exited:\n" + worker.output()[-3000:]
                return bool(delivered(first) and delivered(second))

            wait_until(both_delivered, timeout=60, what="both nudges")
        assert "Unrecoverable error" not in worker.output()


@pytest.mark.postgres
@pytest.mark.redis
def test_a_worker_killed_in_the_middle_of_a_delivery_does_not_lose_the_nudge(
    tmp_path, redis_env, assigner, assignee
):
    redis_env.update({"TEST_DELIVERY_LEASE_SECONDS": "3", "TEST_NOTIFY_HTTP_TIMEOUT": "20"})
    with FakeService() as slack:
        notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=slack.url)
        held = threading.Event()
        slack.reply_with(Reply(200, "ok", hold=held))  # the first request hangs

        with celery_worker(redis_env, tmp_path / "first.log") as first:
            first.wait_for_output("ready.")
            commitment = create_pending(assigner, assignee)
            slack.wait_for_requests(1)
            first.kill(signal.SIGKILL)
        held.set()
        delivery = NudgeDelivery.objects.get(event__commitment=commitment)
        assert delivery.status == NudgeDeliveryStatus.SENDING  # claimed by the dead worker

        with celery_worker(redis_env, tmp_path / "second.log") as second:
            second.wait_for_output("ready.")
            wait_until(lambda: delivered(commitment), timeout=30, what="the nudge")
            let_sweeps_run(second)

    delivery.refresh_from_db()
    assert delivery.status == NudgeDeliveryStatus.DELIVERED
    assert delivery.channel == ChannelKind.SLACK
    # The first request reached Slack but its answer was never recorded: the
    # one window in which a nudge can go out twice.
    assert len(slack.requests) == 2
    assert [a.outcome for a in delivery.attempt_log.all()] == [
        AttemptOutcome.INTERRUPTED,
        AttemptOutcome.DELIVERED,
    ]


def test_the_embedded_default_delivers_a_nudge_with_no_services(tmp_path):
    """SQLite and the filesystem broker, as `./scripts/serve` runs with nothing
    configured. The event is queued before the worker runs; nothing is dropped."""
    env = subprocess_env(
        tmp_path, DATABASE_URL=None, REDIS_URL=None, TEST_OUTBOX_SWEEP_INTERVAL="3600"
    )
    subprocess.run(
        manage("migrate", "--noinput"),
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
    )
    done = run_python(
        """
from accounts.models import User
from accounts.services import user_email_mark_verified
from audit.services import Actor
from commitments import services
lead = User.objects.create_user("lead@example.com", "x" * 20, display_name="Lead")
knight = User.objects.create_user("knight@example.com", "x" * 20)
user_email_mark_verified(user=knight)  # only a verified address is nudged
commitment = services.commitment_create_pending(
    actor=Actor.for_user(lead), assigner=lead, assignee=knight,
    description="Water the shrubbery", deadline=None)
print(commitment.pk)
""",
        env,
    )
    assert done.stdout.strip()
    with Process(manage("run_worker", "--concurrency=1"), env, tmp_path / "worker.log"):
        mails = wait_until(lambda: read_mails(tmp_path / "mail"), timeout=30, what="a mail")
    (mail,) = mails
    assert mail["Subject"] == "Lead asks you: Water the shrubbery"
    assert mail["To"] == "knight@example.com"


# --- run_worker supervises its workers ------------------------------------------------


def children_of(pid: int) -> dict[int, str]:
    """The processes whose parent is `pid`, with their command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            found[int(entry.name)] = cmdline
    return found


def readies(process: Process, name: str) -> int:
    """How many times a worker named `name` said it was ready."""
    lines = process.output().splitlines()
    return sum(1 for line in lines if f"{name}@" in line and "ready." in line)


def the_celery_worker(supervisor: int) -> int:
    (pid,) = [
        pid
        for pid, cmd in children_of(supervisor).items()
        if " worker " in cmd and "--queues=celery,nudges" in cmd
    ]
    return pid


@pytest.mark.postgres
def test_run_worker_starts_a_killed_worker_again_and_stops_everything_on_sigterm(
    tmp_path, redis_server, assigner, assignee
):
    from tests.harness.api import mint

    env = subprocess_env(tmp_path, REDIS_URL=f"redis://127.0.0.1:{redis_server.port}/0")
    token = mint(assigner)
    with Process(
        manage("run_worker", "--concurrency=1", "--webhook-concurrency=1"),
        env,
        tmp_path / "worker.log",
    ) as supervisor:
        wait_until(lambda: readies(supervisor, "celery") == 1, timeout=60, what="the worker")
        children = children_of(supervisor.proc.pid)
        assert len(children) == 2  # the two workers (beat is a thread of the first)
        # The supervisor is not the command any more: it execs a watcher
        # that imports neither Django nor the application (same pid).
        watcher = Path(f"/proc/{supervisor.proc.pid}/cmdline").read_bytes()
        assert b"lib.supervise" in watcher
        killed = the_celery_worker(supervisor.proc.pid)
        # The outbox's and nudges' worker yields the CPU to the webhooks'.
        (webhooks,) = [pid for pid in children if pid != killed]
        assert os.getpriority(os.PRIO_PROCESS, killed) == min(
            os.getpriority(os.PRIO_PROCESS, webhooks) + settings.WORKER_OUTBOX_NICE, 19
        )
        # And is preempted the moment the webhooks' worker wakes (Linux).
        if settings.WORKER_OUTBOX_IDLE and hasattr(os, "SCHED_IDLE"):
            assert os.sched_getscheduler(killed) == os.SCHED_IDLE
            assert os.sched_getscheduler(webhooks) != os.SCHED_IDLE

        os.kill(killed, signal.SIGKILL)
        supervisor.wait_for_output("killed by SIGKILL")
        supervisor.wait_for_output(
            "Started the worker of the 'celery,nudges' queue(s) with beat again"
        )
        wait_until(lambda: readies(supervisor, "celery") == 2, what="the new worker ready")
        again = the_celery_worker(supervisor.proc.pid)
        assert again != killed
        if settings.WORKER_OUTBOX_IDLE and hasattr(os, "SCHED_IDLE"):
            assert os.sched_getscheduler(again) == os.SCHED_IDLE  # started again as it was
        assert supervisor.proc.poll() is None

        # It consumes: a nudge queued now is delivered.
        commitment, _, _ = inbox_call_in_a_web_process(env, token, "Queued after the kill")
        wait_until(lambda: delivered(commitment), timeout=30, what="the nudge")

        # A clean stop: every child stops, and run_worker exits.
        remaining = children_of(supervisor.proc.pid)
        supervisor.proc.send_signal(signal.SIGTERM)
        assert supervisor.proc.wait(timeout=60) == 0
    assert "Stopping the workers (SIGTERM received)." in supervisor.output()
    assert not [pid for pid in remaining if Path(f"/proc/{pid}").exists()]
