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

import socket

import pytest

from lib import outbound
from notifications.models import NotificationChannel
from notifications.transports import Message, SlackTransport, TeamsTransport, TransportError

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


def resolving_to(monkeypatch, address: str) -> list[str]:
    """Every name resolves to `address` (the one seam lib.outbound resolves
    through); returns the names asked for."""
    asked: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        asked.append(host)
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(outbound.socket, "getaddrinfo", getaddrinfo)
    return asked


# --- Slack and Teams nudges -----------------------------------------------------------


@pytest.mark.parametrize("url", REFUSED_URLS)
def test_a_chat_url_on_the_list_is_refused_on_the_notifications_page(client, assignee, url):
    client.force_login(assignee)

    response = client.post("/settings/notifications/", {"kind": "slack", "webhook_url": url})

    assert response.status_code == 400
    (error,) = response.context["form"].errors["webhook_url"]
    assert error.startswith(("The URL must start with https://", "The URL points to"))
    assert error in response.content.decode()
    assert not NotificationChannel.objects.filter(user=assignee).exists()


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
