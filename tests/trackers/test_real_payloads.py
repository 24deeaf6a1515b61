"""The trackers' own payloads (tests/trackers/payloads, where each came from is
in its README) replayed against the service as it runs: gunicorn with
production's configuration, on this test's database, every delivery signed
with its tracker's own scheme over the raw body (GitHub `X-Hub-Signature-256`,
GitLab `X-Gitlab-Token`, Linear `Linear-Signature`, Jira `X-Hub-Signature`),
GitHub's both as JSON and form-encoded (its default). Each step asserts the
answer and what it did: a commitment created, completed, or nothing."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import httpx
import pytest

from audit.models import AuditEvent
from audit.services import Actor
from commitments.models import Commitment, Status
from commitments.services import commitment_accept
from tests.harness.services import Process, free_port, subprocess_env, wait_until
from tests.harness.trackers import FORM, connect, hook_path, signed_headers, written
from trackers.models import TrackerEvent

pytestmark = [
    pytest.mark.processes,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]

PAYLOADS = Path(__file__).parent / "payloads"
JSON = "application/json"


def saved(name: str) -> bytes:
    return (PAYLOADS / name).read_bytes()


def as_form(raw: bytes) -> bytes:
    """The body GitHub sends for `raw` with its default content type."""
    from urllib.parse import quote_plus

    return b"payload=" + quote_plus(raw.decode()).encode()


def answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", headers={"Host": "localhost"}, timeout=2).is_success
    except httpx.HTTPError:
        return False


@pytest.fixture
def server(transactional_db, tmp_path):
    """gunicorn with config/gunicorn.py, one worker, on a free loopback port.
    One per test: the flush between transactional tests makes new content
    types, which a server kept from the last test would not know."""
    tmp = tmp_path
    port = free_port()
    env = subprocess_env(tmp, DEBUG="1", DB_CONN_MAX_AGE="0")
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    process = Process(
        [
            *(gunicorn, "config.wsgi:application", "--config", "python:config.gunicorn"),
            *("--bind", f"127.0.0.1:{port}", "--workers", "1"),
        ],
        env,
        tmp / "gunicorn.log",
    )
    url = f"http://127.0.0.1:{port}"
    with process:
        wait_until(lambda: answers(url), timeout=60, what="gunicorn answering /healthz")
        yield url


class Tracker:
    """One connection, and its deliveries sent to the running server."""

    def __init__(self, server: str, owner, kind: str, **identities: str) -> None:
        self.connection, self.secret = connect(owner, kind, **identities)
        self.url = server + hook_path(self.connection)

    def send(
        self, raw: bytes, *, event: str = "", content_type: str = JSON, delivery: str | None = None
    ) -> httpx.Response:
        headers = signed_headers(
            self.connection.kind, self.secret, raw, event=event, delivery=delivery
        )
        headers.update({"Content-Type": content_type, "Host": "localhost"})
        return httpx.post(self.url, content=raw, headers=headers, timeout=30)


def accept(commitment: Commitment) -> None:
    commitment_accept(actor=Actor.for_user(commitment.assignee), commitment_id=commitment.pk)


def status_of(external_id: str) -> str:
    return Commitment.objects.get(external_id=external_id).status


def test_github_ping_and_issue_events_json_and_form_encoded(server, assigner, assignee):
    github = Tracker(server, assigner, "github", **{"knight-gh": "knight@example.com"})
    for content_type, body in ((JSON, saved("github/ping.json")), (FORM, None)):
        raw = body if body is not None else as_form(saved("github/ping.json"))
        response = github.send(raw, event="ping", content_type=content_type)
        assert response.status_code == 202, response.text
        assert response.json()["event"] == "ping"
        assert "the connection works" in response.json()["summary"]

    opened = github.send(as_form(saved("github/issues.opened.json")), content_type=FORM)
    assert opened.status_code == 202, opened.text
    assert Commitment.objects.count() == 0

    assigned = github.send(as_form(saved("github/issues.assigned.json")), content_type=FORM)
    assert assigned.status_code == 200, assigned.text
    commitment = Commitment.objects.get()
    assert (commitment.assignee, commitment.external_id) == (assignee, "acme-corp/hello-app#1")
    assert commitment.description == "Spelling error in the README file"
    assert commitment.status == Status.PENDING_HANDSHAKE
    accept(commitment)

    closed = saved("github/issues.closed.json")
    response = github.send(closed)
    assert response.status_code == 200, response.text
    assert status_of("acme-corp/hello-app#1") == Status.COMPLETED

    # The captured close, replayed under a delivery id of the replayer's choosing.
    before = written()
    replay = github.send(closed, delivery="chosen-by-whoever-captured-it")
    assert replay.status_code == 202
    assert replay.json()["redelivery"] is True
    assert written() == before

    for name in ("issues.reopened.json", "issues.unassigned.json"):
        response = github.send(as_form(saved(f"github/{name}")), content_type=FORM)
        assert response.status_code == 202, response.text
        assert status_of("acme-corp/hello-app#1") == Status.COMPLETED
    # Two pings, opened, assigned, closed, reopened, unassigned: the replay wrote nothing.
    assert TrackerEvent.objects.filter(connection=github.connection).count() == 7


def test_github_close_as_not_planned_withdraws(server, assigner, assignee):
    github = Tracker(server, assigner, "github", **{"knight-gh": "knight@example.com"})
    response = github.send(as_form(saved("github/issues.assigned.2.json")), content_type=FORM)
    assert response.status_code == 200, response.text
    accept(Commitment.objects.get())
    response = github.send(
        as_form(saved("github/issues.closed.not_planned.json")), content_type=FORM
    )
    assert response.is_success, response.text
    assert status_of("acme-corp/hello-app#2") == Status.WITHDRAWN
    commitment = Commitment.objects.get()
    withdrawn = AuditEvent.objects.for_object(commitment).get(action="withdrawn")
    assert withdrawn.payload["reason"] == "Closed in GitHub as not planned"


def test_gitlab_issue_hook_open_close_reopen_unassign(server, assigner, assignee):
    gitlab = Tracker(server, assigner, "gitlab", **{"knight-gl": "knight@example.com"})
    response = gitlab.send(saved("gitlab/issue.open.json"))
    assert response.status_code == 200, response.text
    commitment = Commitment.objects.get()
    assert (commitment.assignee, commitment.external_id) == (assignee, "acme/gitlab-test#23")
    assert commitment.description == "New API: create/update/delete file"
    accept(commitment)
    response = gitlab.send(saved("gitlab/issue.close.json"))
    assert response.status_code == 200, response.text
    assert status_of("acme/gitlab-test#23") == Status.COMPLETED
    for name in ("issue.reopen.json", "issue.update.unassigned.json"):
        response = gitlab.send(saved(f"gitlab/{name}"))
        assert response.status_code == 202, response.text
        assert status_of("acme/gitlab-test#23") == Status.COMPLETED


def test_a_gitlab_issue_with_a_two_megabyte_description_arrives(server, assigner, assignee):
    gitlab = Tracker(server, assigner, "gitlab", **{"knight-gl": "knight@example.com"})
    payload = json.loads(saved("gitlab/issue.open.json"))
    payload["object_attributes"]["description"] = "Steps to reproduce, logs. " * 84_000
    raw = json.dumps(payload).encode()
    assert len(raw) > 2 * 1024 * 1024
    response = gitlab.send(raw)
    assert response.status_code == 200, response.text
    assert Commitment.objects.get().external_id == "acme/gitlab-test#23"


def _now(raw: bytes) -> bytes:
    """Linear signs `webhookTimestamp` and refuses one older than a minute."""
    stamp = str(int(time.time() * 1000)).encode()
    return re.sub(rb'"webhookTimestamp": \d+', b'"webhookTimestamp": ' + stamp, raw)


def test_linear_issue_create_complete_and_cancel(server, assigner, assignee):
    linear = Tracker(
        server, assigner, "linear", **{"e5b8f4a1-3c2d-4e6f-9a0b-1c2d3e4f5a6b": "knight@example.com"}
    )
    response = linear.send(_now(saved("linear/issue.create.json")))
    assert response.status_code == 200, response.text
    commitment = Commitment.objects.get()
    assert (commitment.assignee, commitment.external_id) == (assignee, "ENG-42")
    accept(commitment)
    response = linear.send(_now(saved("linear/issue.update.completed.json")))
    assert response.status_code == 200, response.text
    assert status_of("ENG-42") == Status.COMPLETED

    response = linear.send(_now(saved("linear/issue.create.2.json")))
    assert response.status_code == 200, response.text
    accept(Commitment.objects.get(external_id="ENG-43"))
    # Canceled is not done: the commitment is not completed (issue 24, point 9).
    response = linear.send(_now(saved("linear/issue.update.canceled.json")))
    assert response.is_success, response.text
    assert status_of("ENG-43") != Status.COMPLETED


def test_jira_cloud_issue_events_with_account_ids_and_non_latin_titles(
    server, assigner, assignee, make_user
):
    squire = make_user("squire@example.com")
    jira = Tracker(
        server,
        assigner,
        "jira",
        **{
            "712020:9a6d3f10-2c4b-4e71-b8d5-6f0a1e2c3b47": "knight@example.com",
            "5b10ac8d82e05b22cc7d4ef5": "squire@example.com",
        },
    )
    response = jira.send(saved("jira/issue_created.json"))
    assert response.status_code == 200, response.text
    commitment = Commitment.objects.get()
    assert (commitment.assignee, commitment.external_id) == (assignee, "PROJ-101")
    assert commitment.description == "Подготовить квартальный отчёт для клиента"
    accept(commitment)

    done = saved("jira/issue_updated.done.json")
    response = jira.send(done)
    assert response.status_code == 200, response.text
    assert status_of("PROJ-101") == Status.COMPLETED
    before = written()
    replay = jira.send(done)  # a fresh X-Atlassian-Webhook-Identifier
    assert replay.status_code == 202 and replay.json()["redelivery"] is True
    assert written() == before

    response = jira.send(saved("jira/issue_updated.assigned.json"))
    assert response.status_code == 200, response.text
    second = Commitment.objects.get(external_id="PROJ-102")
    assert second.assignee == squire
    assert second.description == (
        "Revisar la facturación de diciembre y añadir las notas de crédito"
    )


def test_an_authentic_body_over_25_mib_leaves_a_row_saying_why(server, assigner, assignee):
    """Past the limit nothing is parsed, but the delivery is not dropped
    without a trace: its HMAC is checked as it streams in, and the
    connection's log says why nothing was done."""
    github = Tracker(server, assigner, "github", **{"knight-gh": "knight@example.com"})
    payload = json.loads(saved("github/issues.assigned.json"))
    payload["issue"]["body"] = "x" * (25 * 1024 * 1024)
    raw = json.dumps(payload).encode()
    response = github.send(raw, delivery="too-large-1")
    assert response.status_code == 202, response.text
    assert (
        f"the body is {len(raw):,} bytes, over the limit of 26,214,400"
        in (response.json()["summary"])
    )
    row = TrackerEvent.objects.get(connection=github.connection)
    assert (row.delivery_id, row.summary) == ("too-large-1", response.json()["summary"])
    assert Commitment.objects.count() == 0
