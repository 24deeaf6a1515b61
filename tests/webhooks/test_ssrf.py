"""The SSRF guard on every outbound request, with issue 9's exact list: in
production settings (OUTBOUND_ALLOW_LOOPBACK off) an integrator's webhook
endpoint and a Slack/Teams nudge URL are refused at registration, with a
clear form error, and again at send time, on the address a name resolves to
(so a name that resolved to a public address when it was registered and to
a private one later does not get through).

tests/lib/test_outbound.py covers the rules of lib.outbound itself (every
kind of address); this module proves that both send paths and both forms go
through them."""

from __future__ import annotations

import ipaddress
import logging
import socket

import pytest

from lib import outbound
from notifications.models import NudgeChannel
from notifications.transports import Message, SlackTransport, TeamsTransport, TransportError
from tests.harness.api import form_key_in, sign_in
from tests.harness.webhook_pages import delivery_row, endpoint_for, resolve_every_name_to
from webhooks import sending
from webhooks.models import WebhookAttempt, WebhookEndpoint
from webhooks.services import URL_HOST_REFUSED
from webhooks.signing import secret_generate

pytestmark = pytest.mark.django_db

# The list, as URLs written by hand...
REFUSED_URLS = [
    "http://hooks.example.com/receive",  # plain HTTP
    "https://127.0.0.1/receive",  # loopback
    "https://10.0.0.1/receive",  # private
    "https://169.254.169.254/latest/meta-data",  # link-local: cloud metadata
    "https://[::1]/receive",  # IPv6 loopback
    "https://[::ffff:127.0.0.1]/receive",  # IPv4-mapped IPv6 loopback
]
# ...and as what a public-looking name resolves to.
REFUSED_ADDRESSES = ["127.0.0.1", "10.0.0.1", "169.254.169.254", "::1", "::ffff:127.0.0.1"]
NAMED_URL = "https://hooks.example.com/receive"

MESSAGE = Message(subject="Lead asks you: a report", text="By Friday.", url="https://x.test/c/1")


@pytest.fixture(autouse=True)
def production(settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = False


@pytest.fixture(autouse=True)
def no_connection(monkeypatch):
    """Every case here is refused before a socket is opened: a connection
    attempt fails the test instead of reaching the address."""

    def connect(*args, **kwargs):
        raise AssertionError("a connection was attempted")

    monkeypatch.setattr(outbound.httpx, "Client", connect)


def shown(address: str) -> str:
    """An address as messages write it (::ffff:7f00:1 for ::ffff:127.0.0.1)."""
    return str(ipaddress.ip_address(address))


def resolving_to(monkeypatch, address: str) -> list[str]:
    """Every name resolves to `address` (the one seam lib.outbound resolves
    through); returns the names asked for."""
    asked: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        asked.append(host)
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr("lib.outbound.socket.getaddrinfo", getaddrinfo)
    return asked


# --- Slack and Teams nudges -----------------------------------------------------------


@pytest.mark.parametrize("url", REFUSED_URLS)
def test_a_chat_url_on_the_list_is_refused_on_the_notifications_page(client, assignee, url):
    client.force_login(assignee)

    response = client.post("/settings/notifications/", {"kind": "slack", "chat_url": url})

    assert response.status_code == 400
    (error,) = response.context["form"].errors["chat_url"]
    assert error.startswith(("The URL must start with https://", "The URL points to"))
    assert error in response.content.decode()
    assert not NudgeChannel.objects.filter(user=assignee).exists()


@pytest.mark.parametrize("address", REFUSED_ADDRESSES)
def test_a_chat_name_that_resolves_to_an_address_on_the_list_is_refused_on_the_page(
    client, assignee, monkeypatch, address
):
    asked = resolving_to(monkeypatch, address)
    client.force_login(assignee)

    response = client.post("/settings/notifications/", {"kind": "slack", "chat_url": NAMED_URL})

    assert asked == ["hooks.example.com"]
    assert response.status_code == 400
    (error,) = response.context["form"].errors["chat_url"]
    # Refused without saying where the name leads (that stays in the log).
    assert error == URL_HOST_REFUSED
    assert shown(address) not in response.content.decode()
    assert not NudgeChannel.objects.filter(user=assignee).exists()


@pytest.mark.parametrize("transport", [SlackTransport, TeamsTransport])
@pytest.mark.parametrize("url", REFUSED_URLS)
def test_a_chat_url_on_the_list_is_refused_at_send_time_for_good(transport, url):
    with pytest.raises(TransportError) as refused:
        transport(url).notify(MESSAGE)
    assert refused.value.permanent is True


@pytest.mark.parametrize("transport", [SlackTransport, TeamsTransport])
@pytest.mark.parametrize("address", REFUSED_ADDRESSES)
def test_a_chat_name_that_resolves_to_an_address_on_the_list_is_refused_at_send_time(
    monkeypatch, transport, address
):
    asked = resolving_to(monkeypatch, address)

    with pytest.raises(TransportError) as refused:
        transport(NAMED_URL).notify(MESSAGE)

    assert asked == ["hooks.example.com"]
    assert refused.value.permanent is True
    assert "resolves to" in refused.value.message


# --- integrators' webhook endpoints ---------------------------------------------------


@pytest.fixture
def owner(client, assigner):
    sign_in(client, assigner)
    return client


def register(client, url: str):
    page = client.get("/settings/webhooks/").content.decode()
    key = form_key_in(page)
    return client.post(
        "/settings/webhooks/", {"external_system": "jira", "url": url, "form_key": key}
    )


@pytest.mark.parametrize("url", REFUSED_URLS)
def test_an_endpoint_url_on_the_list_is_refused_on_the_webhooks_page(owner, url):
    response = register(owner, url)

    assert response.status_code == 400
    (error,) = response.context["form"].errors["url"]
    assert error.startswith(("The URL must start with https://", "The URL points to"))
    assert error in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize("address", REFUSED_ADDRESSES)
def test_an_endpoint_name_that_resolves_to_an_address_on_the_list_is_refused_on_the_page(
    owner, monkeypatch, caplog, address
):
    """Refused with one generic message: which address a name resolved to
    (postgres, redis, vm in a compose deployment) stays in the server's log."""
    asked = resolving_to(monkeypatch, address)

    with caplog.at_level(logging.WARNING, logger="webhooks.services"):
        response = register(owner, NAMED_URL)

    assert asked == ["hooks.example.com"]
    assert response.status_code == 400
    (error,) = response.context["form"].errors["url"]
    assert error == URL_HOST_REFUSED
    page = response.content.decode()
    assert shown(address) not in page and "resolves to" not in page
    assert "hooks.example.com resolves to" in caplog.text and shown(address) in caplog.text
    assert not WebhookEndpoint.objects.exists()


def test_a_name_that_does_not_resolve_from_here_is_taken_by_both_forms_and_refused_at_send(
    owner, client, assignee, monkeypatch, caplog
):
    """One rule for every form that takes a URL (lib.outbound.url_to_store):
    a name that does not resolve from here is taken (a chat service's name
    may resolve only where the workers run); the send checks it again and
    refuses it with the generic message, the detail in the log."""

    def no_such_name(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(outbound.socket, "getaddrinfo", no_such_name)
    response = register(owner, NAMED_URL)
    assert response.status_code == 302
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.url == NAMED_URL

    with caplog.at_level(logging.WARNING, logger="webhooks.sending"):
        attempt = _send_to(endpoint)
    assert attempt.outcome == "failed" and attempt.status_code is None
    assert attempt.error == sending.HOST_REFUSED
    assert "Cannot resolve hooks.example.com" in caplog.text

    client.force_login(assignee)
    saved = client.post("/settings/notifications/", {"kind": "teams", "chat_url": NAMED_URL})
    assert saved.status_code == 302
    assert NudgeChannel.objects.get(user=assignee).chat_url == NAMED_URL


def _send_to(endpoint: WebhookEndpoint) -> WebhookAttempt:
    delivery = delivery_row(endpoint, None)
    sending.webhook_send(delivery_id=delivery.pk)
    return WebhookAttempt.objects.get(delivery=delivery)


@pytest.mark.parametrize("url", REFUSED_URLS)
def test_an_endpoint_url_on_the_list_is_refused_at_send_time(assigner, url):
    # Stored as it is (registered under other rules, or written by hand):
    # the send checks again, whatever the registration let through.
    endpoint = WebhookEndpoint.objects.create(
        user=assigner, external_system="jira", url=url, secret=secret_generate()
    )

    attempt = _send_to(endpoint)

    assert attempt.outcome == "failed" and attempt.status_code is None
    assert attempt.error.startswith(("The URL must start with https://", "The URL points to"))


@pytest.mark.parametrize("address", REFUSED_ADDRESSES)
def test_an_endpoint_name_that_resolves_to_an_address_on_the_list_later_is_refused_at_send_time(
    assigner, monkeypatch, caplog, address
):
    """DNS rebinding: public when registered, private when sent to."""
    resolve_every_name_to(monkeypatch)
    endpoint = endpoint_for(assigner, url=NAMED_URL)
    asked = resolving_to(monkeypatch, address)

    with caplog.at_level(logging.WARNING, logger="webhooks.sending"):
        attempt = _send_to(endpoint)

    assert asked == ["hooks.example.com"]
    assert attempt.outcome == "failed" and attempt.status_code is None
    # The owner sees that it was refused, not where the name led (the log has it).
    assert attempt.error == sending.HOST_REFUSED
    assert shown(address) not in attempt.delivery.last_error
    assert "hooks.example.com resolves to" in caplog.text and shown(address) in caplog.text


def test_a_name_that_resolves_too_slowly_does_not_hold_the_web_worker(owner, monkeypatch, settings):
    """Issue 16, point 7: getaddrinfo has no timeout; the form waits at most
    OUTBOUND_RESOLVE_TIMEOUT for it, then leaves the name to the send to
    judge, like one that does not resolve (lib.outbound.url_to_store)."""
    import threading

    release, answered = threading.Event(), threading.Event()

    def slow(host, port, *args, **kwargs):
        release.wait(timeout=10)
        answered.set()
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", port))]

    settings.OUTBOUND_RESOLVE_TIMEOUT = 0.2
    monkeypatch.setattr(outbound.socket, "getaddrinfo", slow)
    try:
        response = register(owner, NAMED_URL)
        assert not answered.is_set()  # the page answered while the resolver still worked
    finally:
        release.set()

    assert response.status_code == 302
    assert WebhookEndpoint.objects.get().url == NAMED_URL
