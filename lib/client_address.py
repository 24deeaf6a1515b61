"""Who is calling: the client's address as the trusted-proxy settings say, and
client networks (CIDR) to compare it with.

One rule for the whole service (allauth's limits, the audit trail's sign-in
rows and the API tokens' networks all ask `client_ip`), the rule allauth
documents: with `TRUSTED_CLIENT_IP_HEADER` set, that header names the client;
else with `TRUSTED_PROXY_COUNT` = N > 0 the N-th `X-Forwarded-For` entry from
the end (the one your outermost proxy appended); else the peer address
(`REMOTE_ADDR`). With no proxy trusted, `X-Forwarded-For` is ignored: anyone
can send it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from django.conf import settings
from django.http import HttpRequest
from django.http.request import split_domain_port

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _clean(value: str) -> str | None:
    """The address in `value` (a port, brackets or an IPv6 zone dropped), in
    its canonical text form; None when it is no IP address."""
    value = value.strip()
    domain, port = split_domain_port(value)
    if port and domain:
        value = domain[1:-1] if domain.startswith("[") and domain.endswith("]") else domain
    try:
        return str(ipaddress.ip_address(value.split("%", 1)[0]))
    except ValueError:
        return None


def client_ip(request: HttpRequest) -> str | None:
    """The client's address, or None when the configured source gives none
    (the trusted header missing, fewer `X-Forwarded-For` entries than trusted
    proxies: a request that did not come through them)."""
    header = settings.ALLAUTH_TRUSTED_CLIENT_IP_HEADER
    if header:
        value = request.headers.get(header)
    else:
        count = settings.ALLAUTH_TRUSTED_PROXY_COUNT
        forwarded = request.headers.get("X-Forwarded-For") if count > 0 else None
        if forwarded:
            entries = forwarded.split(",")
            value = entries[-count] if len(entries) >= count else None
            if value is None:
                return None
        else:
            value = request.META.get("REMOTE_ADDR")
    return _clean(value) if value else None


def _unmapped(address: Address) -> Address:
    """An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, what a dual-stack socket
    reports for an IPv4 peer) as the IPv4 address it is."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def normalise_network(text: str) -> str:
    """A client network in canonical CIDR form (`192.0.2.0/24`, `2001:db8::/32`;
    a lone address is its own /32 or /128). Raises ValueError with a message
    for a person when the text is no network, or has bits set past its prefix
    (`192.0.2.1/24`: did you mean the address or the network?)."""
    text = text.strip()
    try:
        network = ipaddress.ip_network(text, strict=True)
    except ValueError:
        try:
            loose = ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise ValueError(
                f"“{text}” is not an IP network: write it as 192.0.2.0/24 or 2001:db8::/32 "
                "(a single address is fine too)."
            ) from None
        raise ValueError(
            f"“{text}” has host bits set: write the network as {loose.with_prefixlen}, "
            f"or the single address as {ipaddress.ip_interface(text).ip}."
        ) from None
    mapped = isinstance(network, ipaddress.IPv6Network) and network.prefixlen >= 96
    if mapped and network.network_address.ipv4_mapped is not None:
        # Written as ::ffff:a.b.c.d/n: store the IPv4 network it means, which is
        # what a client's mapped address is compared with (`_unmapped`).
        network = ipaddress.ip_network(
            f"{network.network_address.ipv4_mapped}/{network.prefixlen - 96}"
        )
    return network.with_prefixlen


def normalise_networks(texts: Iterable[str]) -> list[str]:
    """Each network normalised, duplicates dropped, in the order given."""
    seen: dict[str, None] = {}
    for text in texts:
        if text.strip():
            seen.setdefault(normalise_network(text), None)
    return list(seen)


def address_in_networks(address: str, networks: Iterable[str]) -> bool:
    """True when `address` (as `client_ip` gives it) is inside one of the
    normalised `networks`."""
    try:
        parsed = _unmapped(ipaddress.ip_address(address))
    except ValueError:
        return False
    return any(parsed in ipaddress.ip_network(network) for network in networks)
