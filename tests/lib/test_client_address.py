"""lib.client_address: the client's address as the trusted-proxy settings say
(the one rule allauth's limits, the audit trail and API tokens share), believed
only from a peer inside TRUSTED_PROXY_NETWORKS, and client networks."""

from __future__ import annotations

import re

import pytest
from django.test import RequestFactory

from lib.client_address import address_in_networks, client_ip, normalise_network

PROXIES = ["10.0.0.0/24"]  # where the tests' proxies connect from (10.0.0.2, 10.0.0.3)


@pytest.fixture(autouse=True)
def _proxies(settings):
    settings.TRUSTED_PROXY_NETWORKS = PROXIES


def request(remote: str = "198.51.100.7", **headers: str):
    return RequestFactory().get("/", REMOTE_ADDR=remote, headers=headers)


def test_with_no_proxy_trusted_the_peer_is_the_client(settings):
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 0
    assert client_ip(request(**{"X-Forwarded-For": "203.0.113.9"})) == "198.51.100.7"


@pytest.mark.parametrize(
    ("count", "forwarded", "expected"),
    [
        (1, "203.0.113.9", "203.0.113.9"),
        (1, "192.0.2.66, 203.0.113.9", "203.0.113.9"),  # the client's own claim ignored
        (2, "192.0.2.66, 203.0.113.9, 10.0.0.3", "203.0.113.9"),
        (2, "192.0.2.66, 203.0.113.9, ::ffff:10.0.0.3", "203.0.113.9"),
        (1, "[2001:db8::5]:4431", "2001:db8::5"),
        (1, "203.0.113.9:4431", "203.0.113.9"),
        (2, "203.0.113.9", None),  # fewer entries than proxies: it bypassed them
        (1, "not-an-address", None),
    ],
)
def test_behind_trusted_proxies(settings, count, forwarded, expected):
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = count
    assert client_ip(request("10.0.0.2", **{"X-Forwarded-For": forwarded})) == expected


def test_without_the_header_the_peer_is_the_client_even_behind_proxies(settings):
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 1
    assert client_ip(request("10.0.0.2")) == "10.0.0.2"


def test_a_trusted_client_ip_header_wins(settings):
    settings.ALLAUTH_TRUSTED_CLIENT_IP_HEADER = "X-Real-IP"
    assert client_ip(request("10.0.0.2", **{"X-Real-IP": "2001:DB8::7"})) == "2001:db8::7"
    assert client_ip(request("10.0.0.2")) is None  # the header is missing: nobody to believe


@pytest.mark.parametrize("count", [1, 2])
def test_a_peer_outside_the_proxy_networks_is_its_own_client(settings, count):
    """Someone who reaches the app port directly (gunicorn binds every
    interface) cannot pick the address a token's networks let in."""
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = count
    forged = {"X-Forwarded-For": "203.0.113.9, 203.0.113.9, 10.0.0.3"}
    assert client_ip(request("198.51.100.7", **forged)) == "198.51.100.7"


def test_a_client_ip_header_from_outside_the_proxy_networks_is_ignored(settings):
    settings.ALLAUTH_TRUSTED_CLIENT_IP_HEADER = "X-Real-IP"
    assert client_ip(request("198.51.100.7", **{"X-Real-IP": "203.0.113.9"})) == "198.51.100.7"


def test_an_inner_proxys_entry_must_be_one_of_the_proxies(settings):
    """With two proxies, the last entry is the outer proxy as the inner one saw
    it: a client that skipped the outer proxy (talking to the inner one
    directly) shows up there, and its forged first entry is not believed."""
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 2
    skipped = {"X-Forwarded-For": "203.0.113.9, 198.51.100.7"}
    assert client_ip(request("10.0.0.2", **skipped)) is None
    through_both = {"X-Forwarded-For": "203.0.113.9, 10.0.0.3"}
    assert client_ip(request("10.0.0.2", **through_both)) == "203.0.113.9"


def test_with_no_proxy_networks_nothing_forwarded_is_believed(settings):
    settings.TRUSTED_PROXY_NETWORKS = []
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 1
    assert client_ip(request("10.0.0.2", **{"X-Forwarded-For": "203.0.113.9"})) == "10.0.0.2"


def test_allauth_asks_the_same_helper(settings):
    from allauth.account.adapter import get_adapter

    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 1
    req = request("10.0.0.2", **{"X-Forwarded-For": "192.0.2.66, 203.0.113.9"})
    assert get_adapter(req).get_client_ip(req) == "203.0.113.9"
    # ...and its rate limits count a direct caller by its own address too.
    direct = request("198.51.100.7", **{"X-Forwarded-For": "203.0.113.9"})
    assert get_adapter(direct).get_client_ip(direct) == "198.51.100.7"


@pytest.mark.parametrize(
    ("address", "networks", "inside"),
    [
        ("203.0.113.9", ["203.0.113.0/24"], True),
        ("203.0.114.9", ["203.0.113.0/24"], False),
        ("::ffff:203.0.113.9", ["203.0.113.0/24"], True),
        ("2001:db8::1", ["203.0.113.0/24", "2001:db8::/32"], True),
        ("2001:db9::1", ["2001:db8::/32"], False),
        ("203.0.113.9", [], False),
        ("nonsense", ["0.0.0.0/0"], False),
    ],
)
def test_address_in_networks(address, networks, inside):
    assert address_in_networks(address, networks) is inside


def test_normalise_network_names_the_bad_text():
    with pytest.raises(ValueError, match=re.escape("“10.0.0.0/33” is not an IP network")):
        normalise_network("10.0.0.0/33")
    assert normalise_network(" 2001:DB8:0::/48 ") == "2001:db8::/48"
