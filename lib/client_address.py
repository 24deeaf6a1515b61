"""Who is calling: the client's address as the trusted-proxy settings say, and
client networks (CIDR) to compare it with.

One rule for the whole service (allauth's limits, through the account
adapter's `get_client_ip`, the audit trail's sign-in rows and the API tokens'
networks all ask `client_ip`), the rule allauth documents, believed only from
a peer (`REMOTE_ADDR`) inside `TRUSTED_PROXY_NETWORKS`: with
`TRUSTED_CLIENT_IP_HEADER` set, that header names the client; else with
`TRUSTED_PROXY_COUNT` = N > 0 the N-th `X-Forwarded-For` entry from the end
(the one your outermost proxy appended), the N-1 entries after it being your
inner proxies' addresses; else the peer address. A request from any other
peer (one that reached the app port directly) is its own client, whatever
headers it sends: anyone can send them. The forwarded scheme header
(`TRUST_X_FORWARDED_PROTO`) follows the same rule (`from_trusted_proxy`,
config.middleware.UntrustedProxyHeadersMiddleware).
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


def _in_proxy_networks(value: str | None) -> bool:
    address = _clean(value) if value else None
    return address is not None and address_in_networks(address, settings.TRUSTED_PROXY_NETWORKS)


def from_trusted_proxy(request: HttpRequest) -> bool:
    """The request's peer is one of your proxies (inside
    TRUSTED_PROXY_NETWORKS): only then are the headers a proxy sets (the
    client's address, the scheme) believed."""
    return _in_proxy_networks(request.META.get("REMOTE_ADDR"))


def client_ip(request: HttpRequest) -> str | None:
    """The client's address, or None when the configured source gives none
    (the trusted header missing, fewer `X-Forwarded-For` entries than trusted
    proxies, or an inner proxy's entry outside TRUSTED_PROXY_NETWORKS: a
    request that did not come through them all)."""
    peer = request.META.get("REMOTE_ADDR")
    header = settings.ALLAUTH_TRUSTED_CLIENT_IP_HEADER
    count = settings.ALLAUTH_TRUSTED_PROXY_COUNT
    if (header or count > 0) and from_trusted_proxy(request):
        if header:
            value = request.headers.get(header)
            return _clean(value) if value else None
        forwarded = request.headers.get("X-Forwarded-For")
        if forwarded:
            entries = forwarded.split(",")
            if len(entries) < count:
                return None
            # Each inner proxy appended the address of the one before it.
            if not all(_in_proxy_networks(entry) for entry in entries[len(entries) - count + 1 :]):
                return None
            return _clean(entries[-count])
        # A proxy's own request (its health check): the proxy is the client.
    return _clean(peer) if peer else None


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
    mapped = (
        network.network_address.ipv4_mapped
        if isinstance(network, ipaddress.IPv6Network) and network.prefixlen >= 96
        else None
    )
    if mapped is not None:
        # Written as ::ffff:a.b.c.d/n: store the IPv4 network it means, which is
        # what a client's mapped address is compared with (`_unmapped`).
        network = ipaddress.ip_network(f"{mapped}/{network.prefixlen - 96}")
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
