"""Operations: /healthz and /readyz, the request id, JSON logs, and gunicorn
workers that load the application before their first request.

/readyz is checked against real workers (subprocesses) on the test's Redis:
one that does not consume the webhooks queue leaves the service not ready,
naming the queue. The request id is followed from an inbox call into a real
worker's JSON log lines. gunicorn is started for real, with a hook that
records, before each worker's first request, whether the URLconf is loaded.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import httpx
import pytest

from config.middleware import RequestIdMiddleware
from lib.logs import JsonFormatter, RequestIdFilter, request_id_var
from tests.harness.services import (
    Process,
    free_port,
    manage,
    purge_queue,
    subprocess_env,
    wait_until,
)

# --- /healthz --------------------------------------------------------------------------


@pytest.mark.django_db
def test_healthz_answers_json_without_touching_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/healthz")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"status": "ok"}
    assert "no-store" in response["Cache-Control"]


# --- /readyz ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_readyz_on_the_embedded_default_is_the_database_and_says_queues_are_not_checked(
    client, settings
):
    settings.REDIS_URL = ""

    response = client.get("/readyz")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["status"] == "ready"
    assert body["checks"]["database"] == {"ok": True}
    assert body["checks"]["queues"]["checked"] is False
    assert "embedded default" in body["checks"]["queues"]["note"]


@pytest.mark.django_db
def test_readyz_is_503_in_json_when_the_database_does_not_answer(client, settings, monkeypatch):
    from django.db.backends.utils import CursorWrapper

    settings.REDIS_URL = ""

    def refuse(self, sql, params=None):
        raise RuntimeError("connection refused")

    monkeypatch.setattr(CursorWrapper, "execute", refuse)
    response = client.get("/readyz")

    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response.json()["checks"]["database"] == {
        "ok": False,
        "error": "The database did not answer.",
    }


@pytest.mark.django_db
def test_readyz_is_503_when_redis_does_not_answer(client, settings):
    from tests.harness.services import free_port

    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    settings.BROKER_TIMEOUT = 1

    response = client.get("/readyz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not ready"
    assert body["checks"]["redis"]["ok"] is False
    assert body["checks"]["database"] == {"ok": True}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "asker",
    [
        {"REMOTE_ADDR": "198.51.100.7"},
        # A proxy on this machine: its peer address is loopback, its client is not.
        {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "198.51.100.7"},
    ],
    ids=["from-outside", "through-a-local-proxy"],
)
def test_readyz_tells_anyone_else_the_status_alone(client, settings, asker):
    """Queue names, live worker counts and operator commands are for
    operators; the status code keeps its meaning for every probe."""
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # not ready: nobody answers
    settings.BROKER_TIMEOUT = 1

    response = client.get("/readyz", **asker)

    assert response.status_code == 503
    assert response.json() == {"status": "not ready"}
    assert "no-store" in response["Cache-Control"]


@pytest.mark.django_db
def test_readyz_shows_its_checks_to_staff_from_anywhere(client, settings, make_user):
    settings.REDIS_URL = ""
    client.force_login(make_user(is_staff=True))

    body = client.get("/readyz", REMOTE_ADDR="198.51.100.7").json()

    assert body["status"] == "ready"
    assert body["checks"]["database"] == {"ok": True}


@pytest.mark.django_db
def test_readyz_shows_no_checks_to_someone_signed_in_who_is_not_staff(client, settings, make_user):
    settings.REDIS_URL = ""
    client.force_login(make_user())

    assert client.get("/readyz", REMOTE_ADDR="198.51.100.7").json() == {"status": "ready"}


def not_ready_log(caplog) -> list[tuple[str, int, str]]:
    return [
        (record.name, record.levelno, record.getMessage())
        for record in caplog.records
        if record.levelno >= logging.WARNING
    ]


@pytest.mark.django_db
def test_a_not_ready_probe_logs_one_warning_naming_what_is_missing_and_no_error(
    client, settings, monkeypatch, caplog
):
    from django.db.backends.utils import CursorWrapper

    from tests.harness.services import free_port

    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    settings.BROKER_TIMEOUT = 1

    def refuse(self, sql, params=None):
        raise RuntimeError("connection refused")

    monkeypatch.setattr(CursorWrapper, "execute", refuse)
    with caplog.at_level(logging.INFO):
        for _ in range(2):  # every probe: one line, the same
            assert client.get("/readyz").status_code == 503

    (first, second) = not_ready_log(caplog)
    assert first == second
    name, level, message = first
    assert (name, level) == ("config.health", logging.WARNING)
    assert message.startswith("Not ready: database: The database did not answer")
    assert "(RuntimeError: connection refused)" in message
    assert "redis: Redis did not answer (ConnectionError" in message
    assert "queues: Not checked" in message


@pytest.mark.redis
@pytest.mark.django_db
def test_a_probe_without_workers_logs_which_queues_have_none(client, caplog):
    forget_workers_of_earlier_tests()
    with caplog.at_level(logging.INFO):
        assert client.get("/readyz").status_code == 503

    ((name, level, message),) = not_ready_log(caplog)
    assert (name, level) == ("config.health", logging.WARNING)
    assert (
        "queues: No live worker consumes the queue 'celery', the queue 'nudges', "
        "the queue 'webhooks' (start one: `celery -A config worker -Q celery,nudges,webhooks`, "
        "or `manage.py run_worker`)"
    ) in message


def readyz(client) -> tuple[int, dict]:
    response = client.get("/readyz")
    assert response["Content-Type"] == "application/json"
    return response.status_code, response.json()


def forget_workers_of_earlier_tests() -> None:
    import redis

    from config.health import KEY_PREFIX, routed_queues

    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    client.delete(*(KEY_PREFIX + queue for queue in routed_queues()))
    client.close()


def run_worker(env: dict[str, str], log: Path, *args: str) -> Process:
    return Process(manage("run_worker", "--concurrency=1", "--no-beat", *args), env, log)


def webhooks_worker(env: dict[str, str], log: Path) -> Process:
    return Process(
        [
            *(sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "webhooks"),
            *("--hostname=webhooks-only@%h", "--concurrency=1", "--loglevel=INFO"),
            *("--without-gossip", "--without-mingle", "--without-heartbeat"),
        ],
        env,
        log,
    )


@pytest.mark.processes
@pytest.mark.postgres
@pytest.mark.redis
def test_readyz_needs_a_live_consumer_on_every_routed_queue(tmp_path, client, settings):
    settings.WORKER_HEARTBEAT_STALE = 4
    purge_queue(os.environ["REDIS_URL"])
    forget_workers_of_earlier_tests()
    env = subprocess_env(tmp_path, TEST_WORKER_HEARTBEAT_INTERVAL="1")

    # No worker at all.
    status, body = readyz(client)
    assert status == 503
    assert body["checks"]["queues"]["consumers"] == {"celery": 0, "nudges": 0, "webhooks": 0}

    # `celery worker` without `-Q webhooks`: the default and nudges queues only.
    with run_worker(env, tmp_path / "celery.log", "--webhook-concurrency=0") as worker:
        worker.wait_for_output("ready.", timeout=60)
        wait_until(
            lambda: readyz(client)[1]["checks"]["queues"]["consumers"]["celery"] == 1,
            what="the worker's heartbeat",
        )
        status, body = readyz(client)
        assert status == 503
        assert body["status"] == "not ready"
        assert body["checks"]["queues"]["consumers"] == {"celery": 1, "nudges": 1, "webhooks": 0}
        assert "'webhooks'" in body["checks"]["queues"]["error"]
        assert "'celery'" not in body["checks"]["queues"]["error"]
        assert "'nudges'" not in body["checks"]["queues"]["error"]

        # A worker on the webhooks queue: ready.
        with webhooks_worker(env, tmp_path / "webhooks.log") as hooks:
            hooks.wait_for_output("ready.", timeout=60)
            wait_until(lambda: readyz(client)[0] == 200, what="ready")
            status, body = readyz(client)
            assert body == {
                "status": "ready",
                "checks": {
                    "database": {"ok": True},
                    "redis": {"ok": True},
                    "queues": {
                        "ok": True,
                        "consumers": {"celery": 1, "nudges": 1, "webhooks": 1},
                    },
                },
            }
            # Killed (no clean shutdown): its heartbeat goes stale.
            hooks.kill()
            wait_until(lambda: readyz(client)[0] == 503, what="not ready", timeout=20)
            assert readyz(client)[1]["checks"]["queues"]["consumers"]["webhooks"] == 0


# --- the request id --------------------------------------------------------------------


def request_id_seen(header: str | None) -> tuple[str, str | None]:
    """The id a request with this X-Request-ID gets in its response, and the
    one current while the view ran."""
    from django.http import HttpResponse
    from django.test import RequestFactory

    seen = {}

    def view(request):
        seen["id"] = request_id_var.get()
        return HttpResponse("ok")

    headers = {} if header is None else {"X-Request-ID": header}
    response = RequestIdMiddleware(view)(RequestFactory().get("/", headers=headers))
    return response["X-Request-ID"], seen["id"]


def test_a_sane_request_id_is_kept_and_echoed():
    assert request_id_seen("trace-42.a_b:C") == ("trace-42.a_b:C", "trace-42.a_b:C")
    assert request_id_var.get() is None  # not left behind for the next request


@pytest.mark.parametrize("header", [None, "", "x" * 129, "has space", "bad\u00e9", "a<b>"])
def test_a_missing_or_odd_request_id_is_replaced_by_a_new_one(header):
    echoed, current = request_id_seen(header)

    assert echoed == current
    assert len(echoed) == 32 and int(echoed, 16) >= 0
    assert echoed != request_id_seen(header)[0]


def test_json_log_lines_carry_the_request_id():
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "hello %s", ("there",), None)
    token = request_id_var.set("req-1")
    try:
        RequestIdFilter().filter(record)
    finally:
        request_id_var.reset(token)

    line = json.loads(JsonFormatter().format(record))

    assert line["message"] == "hello there"
    assert line["level"] == "WARNING"
    assert line["request_id"] == "req-1"


@pytest.mark.django_db
def test_an_api_answer_has_the_request_id_header(client):
    response = client.post(
        "/api/v1/inbox", data="{}", content_type="application/json", headers={"X-Request-ID": "r-9"}
    )

    assert response.status_code == 401
    assert response["X-Request-ID"] == "r-9"


def json_lines(text: str) -> list[dict]:
    lines = []
    for raw in text.splitlines():
        try:
            lines.append(json.loads(raw))
        except ValueError:
            continue
    return lines


@pytest.mark.processes
@pytest.mark.postgres
@pytest.mark.redis
def test_the_request_id_reaches_the_worker_log_of_the_work_it_caused(
    tmp_path, client, assigner, assignee
):
    from notifications.tasks import deliver_nudge
    from relay.tasks import dispatch_event
    from tests.harness.api import INBOX, inbox_body, mint, post_json

    token = mint(assigner)
    purge_queue(os.environ["REDIS_URL"])
    env = subprocess_env(tmp_path, LOG_JSON="1", TEST_OUTBOX_SWEEP_GRACE="3600")
    with run_worker(env, tmp_path / "worker.log", "--webhook-concurrency=0") as worker:
        worker.wait_for_output("ready", timeout=60)
        response = post_json(
            client, INBOX, inbox_body(), token=token, **{"X-Request-ID": "trace-inbox-1"}
        )
        assert response.status_code == 201, response.content

        def tasks_logged() -> set[str]:
            return {
                line.get("task", "")
                for line in json_lines(worker.output())
                if line.get("request_id") == "trace-inbox-1"
            }

        # The outbox event's dispatch, and the nudge it made (queued by the
        # worker itself), both log under the request's id.
        wait_until(
            lambda: {dispatch_event.name, deliver_nudge.name} <= tasks_logged(),
            what="the worker's lines with the request id",
        )
    lines = [line for line in json_lines(worker.output()) if line.get("request_id")]
    assert {line["request_id"] for line in lines} == {"trace-inbox-1"}
    assert len({line["task_id"] for line in lines}) >= 2


# --- gunicorn loads the application before serving -----------------------------------

PROBE_CONFIG = """
import json, os, sys
from config.gunicorn import *  # noqa: F403

_seen = set()


def pre_request(worker, req):
    if worker.pid in _seen:
        return
    _seen.add(worker.pid)
    from django.urls import get_resolver

    loaded = "config.urls" in sys.modules and get_resolver()._populated
    with open(os.environ["PROBE_FILE"], "a") as out:
        out.write(json.dumps({"pid": worker.pid, "urlconf_loaded": loaded}) + "\\n")
"""


@pytest.mark.processes
@pytest.mark.postgres
@pytest.mark.redis
def test_each_gunicorn_worker_has_loaded_the_urlconf_before_its_first_request(tmp_path):
    (tmp_path / "probe_gunicorn.py").write_text(PROBE_CONFIG)
    probe = tmp_path / "first-requests.jsonl"
    port = free_port()
    env = subprocess_env(
        tmp_path, PROBE_FILE=str(probe), PORT=str(port), DJANGO_SETTINGS_MODULE="config.settings"
    )
    env["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{env['PYTHONPATH']}"
    command = [
        *(sys.executable, "-m", "gunicorn", "config.wsgi:application"),
        *("--config", "python:probe_gunicorn", "--workers", "3"),
    ]
    with Process(command, env, tmp_path / "gunicorn.log") as server:
        server.wait_for_output("Booting worker", timeout=60)

        def answered() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(answered, timeout=60, what="gunicorn")
        # New connections each time, so the requests spread over the workers.
        for _ in range(30):
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
        wait_until(
            lambda: probe.exists() and len(probe.read_text().splitlines()) >= 2,
            what="first requests of two workers",
        )

    records = [json.loads(line) for line in probe.read_text().splitlines()]
    assert len({r["pid"] for r in records}) == len(records) >= 2
    assert all(r["urlconf_loaded"] for r in records), records
