"""Transports against a loopback server playing Slack or Teams, including their
error answers, and e-mail through Django's mail backends."""

from __future__ import annotations

import smtplib
import threading

import pytest
from django.core import mail
from django.core.mail.backends.base import BaseEmailBackend

from notifications.transports import (
    EmailTransport,
    Message,
    SlackTransport,
    TeamsTransport,
    TransportError,
    transport_for,
)
from tests.harness.services import FakeService, Reply, free_port

MESSAGE = Message(
    subject="Lead asks you: Ship <the> report & more",
    text="Lead asks you to: Ship <the> report & more\nBy: no deadline.",
    url="http://localhost:3000/commitments/6f1c2f0e-8a51-4c1e-9a8e-2b1d4f3c5a7b",
    idempotency_key="nudge-1234",
)


@pytest.fixture
def service():
    with FakeService() as fake:
        yield fake


@pytest.fixture(autouse=True)
def _loopback_allowed(settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    settings.NOTIFY_HTTP_TIMEOUT = 2


def send(transport_class, url: str) -> int | None:
    return transport_class(url).notify(MESSAGE)


# --- Slack -------------------------------------------------------------------------


def test_slack_posts_the_text_with_a_link_and_escapes_what_slack_would_parse(service):
    service.reply_with(Reply(200, "ok"))
    assert send(SlackTransport, service.url) == 200
    (request,) = service.wait_for_requests(1)
    assert request.path == "/services/T000/B000/secret"
    assert request.headers["Content-Type"] == "application/json"
    text = request.body["text"]
    assert "Ship &lt;the&gt; report &amp; more" in text
    assert f"<{MESSAGE.url}|Open the commitment>" in text


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (404, "no_service"),
        (410, "channel_is_archived"),
        (403, "invalid_token"),
        (400, "invalid_payload"),
    ],
)
def test_slack_errors_that_retrying_cannot_fix_are_permanent(service, status, body):
    service.reply_with(Reply(status, body))
    with pytest.raises(TransportError) as caught:
        send(SlackTransport, service.url)
    assert caught.value.permanent is True
    assert caught.value.status_code == status
    assert body in caught.value.message


def test_slack_rate_limiting_is_transient_and_carries_retry_after(service):
    service.reply_with(Reply(429, "rate_limited", headers={"Retry-After": "7"}))
    with pytest.raises(TransportError) as caught:
        send(SlackTransport, service.url)
    assert caught.value.permanent is False
    assert caught.value.retry_after == 7


@pytest.mark.parametrize("status", [500, 502, 503])
def test_slack_server_errors_are_transient(service, status):
    service.reply_with(Reply(status, "rollup_error"))
    with pytest.raises(TransportError) as caught:
        send(SlackTransport, service.url)
    assert caught.value.permanent is False


def test_a_service_that_does_not_answer_in_time_is_a_transient_error(service, settings):
    settings.NOTIFY_HTTP_TIMEOUT = 1
    release = threading.Event()
    service.reply_with(Reply(200, "ok", hold=release))
    try:
        with pytest.raises(TransportError) as caught:
            send(SlackTransport, service.url)
    finally:
        release.set()
    assert caught.value.permanent is False
    assert "No answer within 1 s" in caught.value.message


def test_a_refused_connection_is_a_transient_error():
    url = f"http://127.0.0.1:{free_port()}/services/x"
    with pytest.raises(TransportError) as caught:
        send(SlackTransport, url)
    assert caught.value.permanent is False


def test_a_redirect_is_not_followed_and_is_permanent(service):
    service.reply_with(Reply(301, "", headers={"Location": service.url + "/moved"}))
    with pytest.raises(TransportError) as caught:
        send(SlackTransport, service.url)
    assert caught.value.permanent is True
    assert len(service.requests) == 1  # nobody went to /moved


# --- Teams -------------------------------------------------------------------------


def test_teams_posts_an_adaptive_card_and_accepts_202(service):
    service.reply_with(Reply(202, ""))
    assert send(TeamsTransport, service.url) == 202
    (request,) = service.wait_for_requests(1)
    body = request.body
    assert body["type"] == "message"
    (attachment,) = body["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert card["type"] == "AdaptiveCard"
    (heading,) = card["body"][0]["inlines"]
    assert heading["text"] == MESSAGE.subject
    assert card["actions"] == [
        {"type": "Action.OpenUrl", "title": "Open the commitment", "url": MESSAGE.url}
    ]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410])
def test_teams_client_errors_are_permanent(service, status):
    service.reply_with(Reply(status, '{"error":{"code":"WorkflowNotFound"}}'))
    with pytest.raises(TransportError) as caught:
        send(TeamsTransport, service.url)
    assert caught.value.permanent is True
    assert "WorkflowNotFound" in caught.value.message


@pytest.mark.parametrize("status", [408, 429, 500, 503])
def test_teams_timeouts_throttling_and_server_errors_are_transient(service, status):
    service.reply_with(Reply(status, "busy"))
    with pytest.raises(TransportError) as caught:
        send(TeamsTransport, service.url)
    assert caught.value.permanent is False


# --- what production refuses ---------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.slack.com/services/T/B/x",  # not https
        "https://127.0.0.1/services/x",  # loopback
        "https://localhost/services/x",  # a name that resolves to loopback
        "https://10.1.2.3/services/x",  # private
        "https://169.254.169.254/latest/meta-data",  # link-local (cloud metadata)
        "ftp://hooks.slack.com/x",
    ],
)
def test_production_refuses_plain_http_and_private_addresses_without_connecting(settings, url):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    with pytest.raises(TransportError) as caught:
        send(SlackTransport, url)
    assert caught.value.permanent is True


def test_production_judges_the_resolved_address_of_a_name(settings, monkeypatch):
    settings.OUTBOUND_ALLOW_LOOPBACK = False

    def resolves_privately(host, port, *args, **kwargs):
        return [(2, 1, 6, "", ("192.168.1.20", port))]

    monkeypatch.setattr("lib.outbound.socket.getaddrinfo", resolves_privately)
    with pytest.raises(TransportError) as caught:
        send(TeamsTransport, "https://hooks.example.com/workflows/1")
    assert caught.value.permanent is True
    assert "private" in caught.value.message


# --- e-mail ----------------------------------------------------------------------------


def test_email_goes_through_django_mail_with_a_message_id_per_delivery(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []
    EmailTransport("knight@example.com").notify(MESSAGE)
    (sent,) = mail.outbox
    assert sent.to == ["knight@example.com"]
    assert sent.subject == MESSAGE.subject
    assert MESSAGE.url in sent.body
    assert sent.extra_headers["Message-ID"] == "<nudge-1234@localhost>"


class RefusingBackend(BaseEmailBackend):
    def send_messages(self, messages):
        raise smtplib.SMTPRecipientsRefused({"knight@example.com": (550, b"No such user")})


class DownBackend(BaseEmailBackend):
    def send_messages(self, messages):
        raise ConnectionRefusedError(111, "Connection refused")


def test_a_refused_address_is_permanent(settings):
    settings.EMAIL_BACKEND = f"{__name__}.RefusingBackend"
    with pytest.raises(TransportError) as caught:
        EmailTransport("knight@example.com").notify(MESSAGE)
    assert caught.value.permanent is True


def test_a_mail_server_that_is_down_is_transient(settings):
    settings.EMAIL_BACKEND = f"{__name__}.DownBackend"
    with pytest.raises(TransportError) as caught:
        EmailTransport("knight@example.com").notify(MESSAGE)
    assert caught.value.permanent is False


def test_the_registry_has_one_transport_per_channel_kind():
    assert isinstance(transport_for("email", "a@example.com"), EmailTransport)
    assert isinstance(transport_for("slack", "https://x"), SlackTransport)
    assert isinstance(transport_for("teams", "https://x"), TeamsTransport)


# --- an answer that would exhaust memory -----------------------------------------------


def test_a_gzip_bomb_from_a_chat_webhook_is_an_error_with_a_short_excerpt(settings):
    import tracemalloc

    from tests.harness.streaming import BOMB_SIZE, StreamingService, bomb_pieces

    head = (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: " + str(BOMB_SIZE).encode() + b"\r\n\r\n"
    )
    with StreamingService(head, bomb_pieces) as service:
        tracemalloc.start()
        try:
            with pytest.raises(TransportError) as caught:
                send(SlackTransport, service.url)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert caught.value.permanent is False and caught.value.status_code == 503
    assert len(caught.value.message) < 1000
    assert peak < 4 * 1024 * 1024  # not the 10 MiB sent, nor the ~10 GiB it inflates to
