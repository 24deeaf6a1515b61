"""No secret in the logs of a full flow: sign in (a session exists), mint an
API token, save a Slack channel whose URL points at a loopback stand-in,
call the inbox with the bearer token, let the worker's task path send the
nudge (once failing, then again), and send a test. Every log record of
every logger, at DEBUG, written through the handlers settings.LOGGING
configures, is then searched for every secret the flow created.

To cover a new kind of secret (webhook signing secrets, model keys),
create one in the flow and add it to `secrets`.
"""

from __future__ import annotations

import copy
import io
import logging
import logging.config
import secrets as random
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.test import Client

from lib import jobs
from lib.redact import SECRET_PATTERNS, may_hold_a_secret, redact
from notifications.models import ChannelKind, NudgeChannel, NudgeDelivery, NudgeDeliveryStatus
from relay.outbox import outbox_relay
from tests.harness.api import INBOX, inbox_body, mint, post_json
from tests.harness.services import FakeService, Reply

pytestmark = pytest.mark.django_db

CAPTURED = io.StringIO()


@pytest.fixture
def captured_logs(request):
    """Everything every logger writes, at DEBUG, through LOGGING's own
    handlers and filters (their stream swapped for a buffer). With
    `loud_libraries`, httpx and httpcore are forced to DEBUG too, so only
    the redacting filter stands between their URLs and the log."""
    config = copy.deepcopy(django_settings.LOGGING)
    config["root"]["level"] = "DEBUG"
    for handler in config["handlers"].values():
        handler["stream"] = f"ext://{__name__}.CAPTURED"
    if getattr(request, "param", False):
        config["loggers"].update({"httpx": {"level": "DEBUG"}, "httpcore": {"level": "DEBUG"}})
    CAPTURED.seek(0)
    CAPTURED.truncate()
    logging.config.dictConfig(config)
    # Any handler not in LOGGING (a library's, Django's defaults) writes here too.
    loggers = [logging.getLogger(), *map(logging.getLogger, logging.root.manager.loggerDict)]
    redirected = {
        handler: handler.setStream(CAPTURED)
        for logger in loggers
        for handler in logger.handlers
        if isinstance(handler, logging.StreamHandler)
    }
    try:
        yield CAPTURED
    finally:
        for handler, stream in redirected.items():
            if stream is not None:
                handler.setStream(stream)
        logging.config.dictConfig(django_settings.LOGGING)


@pytest.fixture
def worker(monkeypatch, django_capture_on_commit_callbacks):
    """Queued jobs, run by their real Celery tasks in this process (as a
    worker would), with what they queue after commit, until none is left;
    outbox events first queued by the relay, as a worker's relay does."""
    queue: list[tuple[Any, str]] = []  # (a Celery task, untyped, its argument)

    def record(task_name, arg, *, retry=True):
        queue.append((task_name, str(arg)))
        return True

    monkeypatch.setattr(jobs, "enqueue", record)

    def run() -> None:
        outbox_relay()
        while queue:
            task, arg = queue.pop(0)
            with django_capture_on_commit_callbacks(execute=True):
                task(arg)

    return run


@pytest.mark.parametrize(
    "captured_logs", [False, True], ids=["as-configured", "loud-libraries"], indirect=True
)
def test_a_full_flow_logs_none_of_the_secrets_it_created(
    captured_logs, worker, settings, make_user, django_capture_on_commit_callbacks
):
    settings.DEBUG = True  # the quick start's mode: Django's SQL log is live
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    settings.NOTIFY_HTTP_TIMEOUT = 2
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []
    assigner = make_user("lead@example.com", display_name="Lead")
    assignee = make_user("knight@example.com", display_name="Knight")

    with FakeService() as slack:
        slack_url = slack.url.replace("secret", "xoxb" + random.token_hex(12))
        slack_path = slack_url.split(str(slack.server.server_port), 1)[1]

        # Sign in for real: a session, and its id in a cookie.
        browser = Client()
        signed_in = browser.post(
            "/accounts/login/",
            {"login": assignee.email, "password": "correct horse battery"},
        )
        assert signed_in.status_code == 302, signed_in.content
        session_id = browser.cookies["sessionid"].value

        # A Slack channel, through the page.
        saved = browser.post("/settings/notifications/", {"kind": "slack", "chat_url": slack_url})
        assert saved.status_code == 302
        assert NudgeChannel.objects.get(user=assignee).kind == ChannelKind.SLACK

        # An inbox call with a bearer token; the worker sends the nudge,
        # which Slack refuses once (a logged failure) and then takes.
        token = mint(assigner)
        slack.reply_with(Reply(503, "rollup_error"), Reply(200, "ok"))
        with django_capture_on_commit_callbacks(execute=True):
            response = post_json(Client(), INBOX, inbox_body(), token=token)
        assert response.status_code == 201, response.content
        worker()
        delivery = NudgeDelivery.objects.get(recipient=assignee)
        assert delivery.status == NudgeDeliveryStatus.PENDING  # the 503
        NudgeDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=delivery.created_at)
        from relay.outbox import outbox_sweep

        with django_capture_on_commit_callbacks(execute=True):
            outbox_sweep(now=delivery.next_attempt_at)
        worker()
        assert NudgeDelivery.objects.get(pk=delivery.pk).status == NudgeDeliveryStatus.DELIVERED

        # A test message, queued by the page and sent by the worker.
        slack.reply_with(Reply(404, "no_service"))
        with django_capture_on_commit_callbacks(execute=True):
            browser.post("/settings/notifications/test")
        worker()
        page = browser.get("/settings/notifications/").content.decode()
        assert "Slack did not take the test message" in page

        assert len(slack.requests) == 3  # two nudge attempts and the test

    logs = captured_logs.getvalue()
    assert "HTTP" in logs or "Delivery" in logs  # the capture did capture
    secrets = {
        "the API token": token,
        "the Slack URL": slack_url,
        "the Slack URL's path": slack_path,
        "the session id": session_id,
    }
    leaked = [name for name, value in secrets.items() if value in logs]
    assert not leaked, f"{', '.join(leaked)} in the logs:\n{logs[-5000:]}"


# --- the redacting filter, on its own -------------------------------------------------


SECRET_LINES = [
    ("token svc_0123456789abcdefghijABCDEFGHIJ123456 used", "0123456789abcdefghij"),
    ("Authorization: Bearer abc.def-ghi", "abc.def-ghi"),
    ("signing with whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=", "c2VjcmV0LXNlY3JldC1zZWNyZXQ"),
    ("X-Gitlab-Token: trk_0123456789abcdef0123456789abcdef", "0123456789abcdef0123"),
    ("key sk-ant-api03-AbCdEfGhIjKlMnOp", "api03-AbCdEfGhIjKlMnOp"),
    ("key sk-proj-AbCdEfGhIjKlMnOpQrSt", "proj-AbCdEfGhIjKlMnOpQrSt"),
    ("Cookie: sessionid=q1w2e3r4t5y6u7i8o9p0; csrftoken=zz", "q1w2e3r4t5y6u7i8o9p0"),
    (
        'POST https://hooks.slack.com/services/T00/B00/XXXXsecret "HTTP/1.1 200 OK"',
        "/services/T00/B00/XXXXsecret",
    ),
    ("to https://prod-1.westus.logic.azure.com:443/workflows/abc?sig=xyz", "sig=xyz"),
    # This site's own paths that carry a one-time key or a receiving id,
    # in a link or a request line's bare path.
    ("Confirm: http://localhost:3000/accounts/confirm-email/MTA:1tQ:abc-def/", "MTA:1tQ"),
    ("GET /accounts/confirm-email/MTA:1tQ:abc-def/ 302", "MTA:1tQ"),
    ("GET /accounts/password/reset/key/3-c5v-0f1e2d3c4b/ 200", "3-c5v-0f1e2d3c4b"),
    ("POST http://localhost:3000/api/v1/hooks/7d1f0c2ab34e 202", "7d1f0c2ab34e"),
    # Secrets in a query string or a URL's user part, on any site.
    ("http://localhost:3000/accounts/login/code/confirm/?code=8XK2P9", "8XK2P9"),
    ("http://localhost:3000/x?next=/&access_token=abc123def", "abc123def"),
    ("smtp://mailer:hunter2hunter2@smtp.example.com", "hunter2hunter2"),
    ("https://mailer:hunter2hunter2@relay.example.com/send", "hunter2hunter2"),
    ("EMAIL_HOST_PASSWORD password=hunter2hunter2", "hunter2hunter2"),
]


@pytest.mark.parametrize(("line", "secret"), SECRET_LINES)
def test_the_filter_blanks_what_is_shaped_like_a_secret(line, secret):
    assert secret in line
    assert secret not in redact(line)


def test_every_pattern_names_what_its_matches_hold():
    """redact() scans only a text that holds one of some pattern's `needs`
    (lib.redact): every pattern has a line above, and each of its matches
    there holds one of them."""
    for secret in SECRET_PATTERNS:
        matches = [m[0] for line, _ in SECRET_LINES for m in secret.pattern.finditer(line)]
        assert matches, f"no line above for {secret.pattern.pattern}"
        for match in matches:
            assert any(need in match.lower() for need in secret.needs), (secret, match)


def test_an_ordinary_access_line_is_passed_unscanned():
    line = '10.0.0.7 [26/Nov/2026:15:00:00 +0000] "POST /api/v1/inbox HTTP/1.1" 201 52 3ms "curl" a'
    assert not may_hold_a_secret(line)
    assert redact(line) == line


def test_the_filter_keeps_the_host_of_a_url_and_ordinary_text():
    line = "Delivery 42 via slack: transient (Slack answered 503 rollup_error)"
    assert redact(line) == line
    assert redact("POST https://hooks.slack.com/services/T/B/x") == (
        "POST https://hooks.slack.com/[redacted]"
    )


def test_links_to_this_site_keep_their_path(settings):
    """The quick start's worker prints every e-mail to var/worker.log: a
    nudge's or an invitation's link must stay one a newcomer can follow."""
    settings.SITE_URL = "http://localhost:3000"
    link = "http://localhost:3000/commitments/1b4e28ba-2fa1-11d2-883f-0016d3cca427"
    assert redact(f"Open {link} to answer.") == f"Open {link} to answer."
    assert redact("http://LOCALHOST:3000/dashboard/?day=2026-11-26") == (
        "http://LOCALHOST:3000/dashboard/?day=2026-11-26"
    )
    # Another port or host is another site: its path may be its secret.
    assert redact("http://localhost:9000/hook/abc") == "http://localhost:9000/[redacted]"


def test_a_nudge_mail_in_the_workers_log_keeps_its_link_and_loses_a_token(
    captured_logs, worker, settings, assigner, assignee, django_capture_on_commit_callbacks
):
    """A real nudge e-mail, as the console backend writes it to a worker's
    stdout, which Celery sends to the `celery.redirected` logger: through
    LOGGING's handlers its link is whole, a token on the same line is not."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.SITE_URL = "http://localhost:3000"
    mail.outbox = []
    token = mint(assigner)
    with django_capture_on_commit_callbacks(execute=True):
        created = post_json(Client(), INBOX, inbox_body(), token=token)
    assert created.status_code == 201, created.content
    worker()
    (nudge,) = [m for m in mail.outbox if assignee.email in m.to]
    link = f"http://localhost:3000/commitments/{created.json()['id']}"
    assert link in nudge.body

    logging.getLogger("celery.redirected").warning("%s\n(sent with %s)", nudge.body, token)

    logs = captured_logs.getvalue()
    assert link in logs
    assert "[redacted]" in logs
    assert token not in logs


def test_the_filter_cleans_tracebacks_too():
    from lib.redact import RedactSecretsFilter

    try:
        raise ValueError("cannot reach https://hooks.slack.com/services/T/B/very-secret")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", None, True)
        import sys

        record.exc_info = sys.exc_info()
    RedactSecretsFilter().filter(record)
    assert "very-secret" not in record.exc_text
    assert "hooks.slack.com" in record.exc_text


# --- with a real worker process, logging at DEBUG ------------------------------------------


@pytest.mark.processes
@pytest.mark.postgres
@pytest.mark.redis
def test_a_real_worker_at_debug_logs_none_of_the_secrets(
    tmp_path, captured_logs, settings, make_user
):
    import os
    import sys

    from notifications.models import TestNudge
    from tests.harness.services import (
        Process,
        purge_queue,
        subprocess_env,
        wait_until,
    )

    settings.OUTBOUND_ALLOW_LOOPBACK = True
    purge_queue(os.environ["REDIS_URL"])
    env = subprocess_env(tmp_path, LOG_LEVEL="DEBUG")
    env["TEST_OUTBOX_SWEEP_GRACE"] = "3600"  # only the after-commit publishes
    worker = Process(
        [
            *(sys.executable, "-m", "celery", "-A", "config", "worker"),
            *("--concurrency=1", "--loglevel=DEBUG", "--without-gossip", "--without-mingle"),
            "--without-heartbeat",
        ],
        env,
        tmp_path / "worker.log",
    )
    assigner = make_user("lead@example.com", display_name="Lead")
    assignee = make_user("knight@example.com", display_name="Knight")
    with FakeService() as slack, worker:
        worker.wait_for_output("ready.")
        slack_url = slack.url.replace("secret", "xoxb" + random.token_hex(12))
        slack_path = slack_url.split(str(slack.server.server_port), 1)[1]
        browser = Client()
        browser.post(
            "/accounts/login/", {"login": assignee.email, "password": "correct horse battery"}
        )
        session_id = browser.cookies["sessionid"].value
        browser.post("/settings/notifications/", {"kind": "slack", "chat_url": slack_url})
        token = mint(assigner)
        response = post_json(Client(), INBOX, inbox_body(), token=token)
        assert response.status_code == 201, response.content
        wait_until(
            lambda: NudgeDelivery.objects.filter(
                recipient=assignee, status=NudgeDeliveryStatus.DELIVERED
            ).exists(),
            what="the nudge",
        )
        slack.reply_with(Reply(404, "no_service"))
        browser.post("/settings/notifications/test")
        wait_until(
            lambda: TestNudge.objects.filter(user=assignee, finished_at__isnull=False).exists(),
            what="the test",
        )
        assert len(slack.requests) == 2

    logs = captured_logs.getvalue() + worker.output()
    assert "notifications.tasks.send_test_nudge" in worker.output()  # the capture did capture
    secrets = {
        "the API token": token,
        "the Slack URL": slack_url,
        "the Slack URL's path": slack_path,
        "the session id": session_id,
    }
    leaked = [name for name, value in secrets.items() if value in logs]
    assert not leaked, f"{', '.join(leaked)} in the logs:\n{logs[-5000:]}"
