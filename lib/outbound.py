"""Outbound HTTP: the one place that decides where this service may send a
request, and that sends it. Every send path (chat nudges, integrators'
webhooks) and every form that takes a URL (`url_to_store`) goes through here,
and every page shows a stored URL masked (`masked_url`).

The rules (for people: docs/security-webhooks.md):

- `https://` only. `http://` only to a loopback address, and only while
  settings.OUTBOUND_ALLOW_LOOPBACK is on (development and tests).
- The host name is resolved once and every address it resolves to must be
  allowed; the connection then goes to the checked address (the URL is
  rewritten to it, with the original Host header and TLS server name), so DNS
  cannot answer one thing to the check and another to the connection.
- Never allowed: private, link-local (cloud metadata services live there),
  shared/CGNAT (100.64.0.0/10), multicast, reserved and unspecified
  addresses, the IPv4-mapped IPv6 forms of all of these, 6to4 (2002::/16,
  which embeds an IPv4 address: 2002:a9fe:a9fe:: is 169.254.169.254), and
  loopback unless OUTBOUND_ALLOW_LOOPBACK is on.
- A URL with credentials (`user:pw@host`), whitespace or a control character
  anywhere is refused: what is checked is exactly what is sent.
- Name resolution runs under the same deadline as the rest of the call
  (`getaddrinfo` has no timeout of its own, so it runs in a thread that is
  waited for at most the time left).
- Redirects are not followed, every phase has a timeout and the whole call
  a deadline, and at most `max_bytes` of the answer are read (undecoded:
  `Accept-Encoding: identity`, so no decompression bomb).

The deadline holds in every phase, not only between body chunks: every
connect, TLS handshake, read and write on the socket is given at most the
time left before it (`_DeadlineBackend`), so a server that trickles its
headers or its body a byte at a time, each within the per-read timeout, is
cut off at the deadline.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import json as json_module
import re
import socket
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urlsplit

import httpcore
import httpx
from django.conf import settings

from lib.crypto import Undecryptable
from lib.text import excerpt

if TYPE_CHECKING:
    from httpcore._backends.base import SOCKET_OPTION

USER_AGENT = "commitments/1.0"
MAX_RESPONSE_BYTES = 64 * 1024
_LOCAL_NAMES = ("localhost", "localhost.localdomain")
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # CGNAT; some clouds' metadata too
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")  # 6to4: an IPv4 address inside
# Whitespace and control characters (C0, DEL, C1, and the Unicode separators):
# never in a URL this service sends to; a parser might drop or keep them.
_UNSENDABLE = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u2028\u2029]")
RESOLVE_TIMEOUT = 5.0  # s a name may take to resolve when no deadline is given
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class OutboundRefused(Exception):
    """This service will not send to that URL. Trying again cannot help."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class AddressRefused(OutboundRefused):
    """The host name resolves to an address this service does not send to.
    The message names the address: for logs and staff, not for a form (it
    tells how internal names resolve)."""


# What a form says of a URL whose host name leads somewhere refused (or does
# not resolve in time): one message for all, since the detail would tell anyone
# how this service's internal names resolve. The detail goes to the log.
HOST_REFUSED = (
    "This URL cannot be used: its host name must resolve, in time, to public internet "
    "addresses only. Check the URL."
)


class OutboundFailed(Exception):
    """The request did not get an answer (resolution, connection, timeout).
    Trying again later may help."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ResolutionFailed(OutboundFailed):
    """The host name did not resolve (no such name, or not within the time
    left)."""


# --- addresses ----------------------------------------------------------------------


def _unmapped(ip: IPAddress) -> IPAddress:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def is_loopback_address(address: str) -> bool:
    """127.0.0.0/8, ::1 and ::ffff:127.x; False for anything that is not an IP."""
    try:
        return _unmapped(ipaddress.ip_address(address.split("%", 1)[0])).is_loopback
    except ValueError:
        return False


def is_loopback_host(host: str) -> bool:
    """True for localhost (and *.localhost), 127.0.0.0/8 and [::1], with or
    without a port: a Host header or a URL's host."""
    if host.startswith("["):
        name = host[1 : host.find("]")] if "]" in host else host[1:]
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    name = name.lower().rstrip(".")
    return name in _LOCAL_NAMES or name.endswith(".localhost") or is_loopback_address(name)


def address_refusal(ip: IPAddress, *, allow_loopback: bool) -> str | None:
    """Why a request may not go to `ip`, or None when it may."""
    ip = _unmapped(ip)
    if ip.is_loopback:
        return None if allow_loopback else "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.version == 6 and ip in _SIX_TO_FOUR:
        return "a 6to4 address"
    if ip.version == 4 and ip in _SHARED:
        return "a shared (CGNAT) address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_unspecified or ip.is_reserved:
        return "a reserved address"
    if ip.is_private or not ip.is_global or getattr(ip, "is_site_local", False):
        return "a private address"
    return None


def _allow_loopback(allow_loopback: bool | None) -> bool:
    return settings.OUTBOUND_ALLOW_LOOPBACK if allow_loopback is None else allow_loopback


def check_url(url: str, *, allow_loopback: bool | None = None) -> SplitResult:
    """The URL's parts, or OutboundRefused: what can be told without DNS
    (scheme, host, an address written in the URL, local names). A name is
    checked again, resolved, when a request is sent."""
    allow_loopback = _allow_loopback(allow_loopback)
    if _UNSENDABLE.search(url):
        raise OutboundRefused("The URL must not contain spaces or control characters.")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a port out of range)
    except ValueError:
        raise OutboundRefused("The URL is not a valid http(s) URL.") from None
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise OutboundRefused("Enter a full URL, starting with https://.")
    if "@" in parts.netloc:
        raise OutboundRefused("The URL must not contain a user name or password (user:pw@).")
    host = parts.hostname.lower().rstrip(".")
    local = host in _LOCAL_NAMES or host.endswith(".localhost")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if ip is not None:
        reason = address_refusal(ip, allow_loopback=allow_loopback)
        if reason:
            raise OutboundRefused(f"The URL points to {reason}.")
        local = ip.is_loopback or _unmapped(ip).is_loopback
    elif local and not allow_loopback:
        raise OutboundRefused("The URL points to this machine (a loopback address).")
    if parts.scheme != "https" and not local:
        raise OutboundRefused("The URL must start with https://.")
    return parts


def canonical_url(url: str, *, allow_loopback: bool | None = None) -> str:
    """The URL exactly as a request will be made to it (httpx's form: the
    host lower-cased and IDNA-encoded, the path and query percent-encoded,
    a default port and the fragment dropped), after `check_url` on what was
    given and on the result. What a caller stores, so that what was checked
    is what is sent. OutboundRefused when it is not one this service sends to."""
    check_url(url, allow_loopback=allow_loopback)
    try:
        canonical = str(httpx.URL(url).copy_with(fragment=None))
    except (httpx.InvalidURL, ValueError):
        raise OutboundRefused("The URL is not a valid http(s) URL.") from None
    check_url(canonical, allow_loopback=allow_loopback)
    return canonical


# What socket.getaddrinfo gives: family, type, proto, canonname, sockaddr.
_AddrInfo = tuple[socket.AddressFamily, socket.SocketKind, int, str, tuple[Any, ...]]


def _getaddrinfo_within(host: str, port: int, seconds: float) -> list[_AddrInfo]:
    """`socket.getaddrinfo`, given at most `seconds`. It has no timeout of its
    own (a resolver that does not answer holds the caller for as long as the
    system's resolver retries), so it runs in a daemon thread that is waited
    for at most that long; a late answer is dropped with the thread."""
    literal = _literal_address(host, port)
    if literal is not None:
        return literal
    answer: dict[str, Any] = {}

    def lookup() -> None:
        try:
            answer["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            answer["error"] = exc

    worker = threading.Thread(target=lookup, name=f"resolve {host}", daemon=True)
    worker.start()
    worker.join(max(0.0, seconds))
    if worker.is_alive():
        raise ResolutionFailed(f"Cannot resolve {host}: no answer within {seconds:g} s.")
    if "error" in answer:
        raise ResolutionFailed(f"Cannot resolve {host}: {answer['error']}") from answer["error"]
    infos: list[_AddrInfo] = answer["infos"]
    return infos


def _literal_address(host: str, port: int) -> list[_AddrInfo] | None:
    """What getaddrinfo gives for an address written as the host (it asks no
    resolver then, so it needs no thread to bound it): a thread started per
    send cost about 0.3 ms of CPU on the benchmark's machine. None for a
    name, or an address with a zone."""
    if "%" in host:
        return None
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    if ip.version == 6:
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (str(ip), port, 0, 0))
        ]
    return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (str(ip), port))]


def resolve(
    host: str, port: int, *, allow_loopback: bool | None = None, timeout: float = RESOLVE_TIMEOUT
) -> IPAddress:
    """One address `host` resolves to, checked; every address it resolves to
    must be allowed (a name with one private answer among public ones is
    refused: the attacker chooses which one a client would use). Resolution
    takes at most `timeout` seconds (ResolutionFailed after that)."""
    allow_loopback = _allow_loopback(allow_loopback)
    infos = _getaddrinfo_within(host, port, timeout)
    addresses = [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]
    if not addresses:
        raise ResolutionFailed(f"Cannot resolve {host}: no address.")
    for ip in addresses:
        reason = address_refusal(ip, allow_loopback=allow_loopback)
        if reason:
            raise AddressRefused(f"{host} resolves to {reason} ({ip}).")
    return addresses[0]


def check_destination(
    url: str, *, allow_loopback: bool | None = None, timeout: float | None = None
) -> SplitResult:
    """`check_url`, then the host resolved now (within `timeout` seconds) and
    every address it resolves to checked: what a registration form calls. The
    send checks again, on the address it connects to (a name may change its
    answers). OutboundRefused (AddressRefused for what the name resolves to),
    or ResolutionFailed for a name that does not resolve in time (`timeout`,
    default settings.OUTBOUND_RESOLVE_TIMEOUT: a web worker waits for it)."""
    parts = check_url(url, allow_loopback=allow_loopback)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if timeout is None:
        timeout = float(getattr(settings, "OUTBOUND_RESOLVE_TIMEOUT", RESOLVE_TIMEOUT))
    resolve(parts.hostname or "", port, allow_loopback=allow_loopback, timeout=timeout)
    return parts


# --- URLs that forms store ----------------------------------------------------------


class UrlRefused(OutboundRefused):
    """A URL a form must not store. `message` is for the person who typed it;
    `detail`, when set, is for the server's log only (where the name led)."""

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


def url_to_store(url: str, *, max_length: int, empty: str) -> str:
    """The URL a form stores (trimmed, in the exact form a request will be
    made to it: `canonical_url`), or UrlRefused saying why. The one rule for
    every form that takes a URL (webhook endpoints, chat URLs):

    - the URL as written must pass `check_url` (said as it is: scheme,
      credentials, characters, an address typed in it);
    - its host is resolved now, for at most OUTBOUND_RESOLVE_TIMEOUT, and a
      name any of whose addresses is refused is refused with HOST_REFUSED
      (the detail, where it led, in `detail` for the log);
    - a name that does not resolve from here, or not in time, is accepted: a
      chat service's name may resolve only where the workers run (in a
      sandbox without DNS, hooks.slack.com does not), and every send checks
      the address it connects to again (`post`), which is what protects.
    """
    url = (url or "").strip()
    if not url:
        raise UrlRefused(empty)
    too_long = f"At most {max_length} characters."
    if len(url) > max_length:
        raise UrlRefused(too_long)
    try:
        url = canonical_url(url)
        if len(url) > max_length:
            raise UrlRefused(too_long)
        check_destination(url)
    except AddressRefused as exc:
        raise UrlRefused(HOST_REFUSED, detail=exc.message) from None
    except OutboundRefused as exc:  # about the URL as written: said as it is
        raise UrlRefused(exc.message) from None
    except OutboundFailed:
        pass  # does not resolve from here (or not in time): the send judges it
    return url


def masked_url(url: str | Undecryptable | None) -> str:
    """`https://host/…`: enough to tell where messages go, nothing of the
    path or query (they often carry the receiver's token: a chat URL's path
    is its secret). For pages, the admin, the audit trail and messages; the
    full URL is shown only to its owner, on the form that edits it. An
    unreadable stored URL (lib.crypto.Undecryptable) is "(unreadable)"."""
    if isinstance(url, Undecryptable):
        return "(unreadable)"
    parts = urlsplit(url or "")
    if not parts.scheme or not parts.netloc:
        return "—"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}/…"


# --- sending ------------------------------------------------------------------------


# The deadline (monotonic) of the call this thread is making: a kept-alive
# connection serves one call after another, each under its own deadline.
_call = threading.local()


def _deadline() -> float:
    deadline: float = getattr(_call, "deadline", 0.0)
    return deadline


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every operation ends by the deadline of the call
    using it (`_call.deadline`, monotonic)."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def _left(self, timeout: float | None, error: type[Exception]) -> float:
        left = _deadline() - time.monotonic()
        if left <= 0:
            raise error("The overall deadline passed.")
        return left if timeout is None else min(timeout, left)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, self._left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, self._left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._stream.start_tls(
            ssl_context, server_hostname, self._left(timeout, httpcore.ConnectTimeout)
        )
        return _DeadlineStream(stream)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's synchronous sockets, each operation bounded by the deadline
    of the call using it."""

    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        left = _deadline() - time.monotonic()
        if left <= 0:
            raise httpcore.ConnectTimeout("The overall deadline passed.")
        timeout = left if timeout is None else min(timeout, left)
        stream = self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("Unix sockets are not used.")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One client SSL context per process (certifi's CA bundle, verifying).
    Making one loads and parses the bundle, about 18 ms of CPU: made per
    send, it would cost a webhook or chat send more CPU than everything else
    it does (docs/benchmarks.md)."""
    return httpx.create_ssl_context(trust_env=False)


def _deadline_pool() -> httpcore.ConnectionPool:
    """A pool of kept-alive connections on the deadline-bound backend
    (tests/lib/test_outbound.py proves a trickling server is cut off)."""
    return httpcore.ConnectionPool(
        ssl_context=_ssl_context(),
        network_backend=_DeadlineBackend(),
        # A kept-alive connection sends a request's headers and body as two
        # writes: without TCP_NODELAY the second waits for the receiver's
        # delayed ACK (40 ms on Linux) on every send after the first.
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        max_connections=KEEPALIVE_CONNECTIONS,
        max_keepalive_connections=KEEPALIVE_CONNECTIONS,
        keepalive_expiry=KEEPALIVE_SECONDS,
    )


# Kept-alive connections (HTTP/1.1), one pool per receiver: per scheme,
# checked address, port and host name (the TLS name), so a connection made
# to one checked address, verified for one name, only ever carries requests
# that resolved, now, to that address for that name. At most KEEPALIVE_HOSTS
# pools per process (the least recently used is closed), each with at most
# KEEPALIVE_CONNECTIONS connections, idle ones closed after KEEPALIVE_SECONDS.
# httpcore's pool itself, not an httpx client over it: httpx's request and
# response models, cookies, header merging and redirect handling cost a
# webhook send more CPU than the HTTP/1.1 exchange (issue 29,
# docs/benchmarks.md); what this module needs of them is below (`_target`,
# `post`'s headers).
KEEPALIVE_HOSTS = 64
KEEPALIVE_CONNECTIONS = 16
KEEPALIVE_SECONDS = 30.0
_pools: OrderedDict[tuple[str, str, int, str], httpcore.ConnectionPool] = OrderedDict()
_pools_lock = threading.Lock()


def _pool_for(key: tuple[str, str, int, str]) -> httpcore.ConnectionPool:
    with _pools_lock:
        pool = _pools.get(key)
        if pool is not None:
            _pools.move_to_end(key)
            return pool
        pool = _deadline_pool()
        _pools[key] = pool
        while len(_pools) > KEEPALIVE_HOSTS:
            _, oldest = _pools.popitem(last=False)
            with contextlib.suppress(Exception):
                oldest.close()
        return pool


def close_connections() -> None:
    """Close every kept-alive connection (tests; a worker that stops)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        with contextlib.suppress(Exception):
            pool.close()


@dataclass(frozen=True)
class OutboundResponse:
    status_code: int
    headers: httpx.Headers
    content: bytes  # at most max_bytes of the body, as sent (not decompressed)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    @property
    def is_redirect(self) -> bool:
        return 300 <= self.status_code < 400 and "location" in self.headers

    @property
    def retry_after(self) -> float | None:
        """`Retry-After` in seconds, when given as a number."""
        try:
            return max(0.0, float(self.headers.get("Retry-After", "")))
        except ValueError:
            return None


# What httpx raised as an httpx.TransportError (no answer), from its transport.
_TRANSPORT_ERRORS = (
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
    httpcore.ConnectionNotAvailable,
)


@functools.lru_cache(maxsize=1024)
def _target(url: str) -> bytes:
    """The request target (path and query) as httpx sends it for `url`:
    percent-encoded as `canonical_url` stores it. Kept per URL: parsing one
    costs more than the rest of what a send does before it writes."""
    return httpx.URL(url).raw_path


def _json_bytes(value: Any) -> bytes:
    """A JSON body as httpx encodes one."""
    return json_module.dumps(
        value, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode("utf-8")


def is_retryable_status(status_code: int) -> bool:
    """Whether an answer with this status may change if asked again later:
    408 Request Timeout, 429 Too Many Requests and every 5xx. Any other 4xx
    will be the same next time (saleor's and Svix's rule)."""
    return status_code in (408, 429) or status_code >= 500


def post(
    url: str,
    *,
    json: Any = None,
    content: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
    max_bytes: int = MAX_RESPONSE_BYTES,
    allow_loopback: bool | None = None,
    deadline: float | None = None,
) -> OutboundResponse:
    """POST to `url` under the rules above. Raises OutboundRefused (the URL
    or what it resolves to is not allowed) or OutboundFailed (no answer).
    `timeout` bounds each phase (resolving the name, connect, each read, each
    write) and `deadline` (default twice `timeout`) the whole call, name
    resolution included, seconds. An answer whose status came in time but
    whose body did not is returned with what arrived of the body."""
    overall = 2 * timeout if deadline is None else deadline
    ends_at = time.monotonic() + overall
    parts = check_url(url, allow_loopback=allow_loopback)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    left = ends_at - time.monotonic()
    ip = resolve(host, port, allow_loopback=allow_loopback, timeout=min(timeout, left))
    ip_host = f"[{ip}]" if ip.version == 6 else str(ip)
    defaults = {
        "Host": parts.netloc,  # the URL's authority: an IPv6 address in brackets
        "Accept": "*/*",
        "Accept-Encoding": "identity",
        "User-Agent": USER_AGENT,
    }
    if json is not None and content is None:
        content = _json_bytes(json)
        defaults["Content-Type"] = "application/json"
    given = headers or {}
    theirs = {name.lower() for name in given}  # the caller's win, whatever their case
    request_headers = {k: v for k, v in defaults.items() if k.lower() not in theirs} | given
    extensions: dict[str, Any] = {
        "timeout": dict.fromkeys(("connect", "read", "write", "pool"), timeout)
    }
    if parts.scheme == "https":
        # The TLS handshake and certificate check use the name, not the address.
        extensions["sni_hostname"] = host
    # The connection goes to the checked address (httpcore takes it bare,
    # an IPv6 one without brackets); the Host header names the host.
    target = httpcore.URL(scheme=parts.scheme, host=str(ip), port=port, target=_target(url))
    pool = _pool_for((parts.scheme, ip_host, port, host))
    _call.deadline = ends_at
    try:
        with pool.stream(
            "POST",
            target,
            headers=list(request_headers.items()),
            content=content if content is not None else b"",
            extensions=extensions,
        ) as response:
            body = bytearray()
            try:
                for chunk in response.iter_stream():  # raw: never decompressed
                    body += chunk
                    if len(body) >= max_bytes:
                        break
            except httpcore.TimeoutException:
                pass  # the status came in time; the rest of the body is not needed
            return OutboundResponse(
                response.status, httpx.Headers(response.headers), bytes(body[:max_bytes])
            )
    except httpcore.TimeoutException as exc:
        if time.monotonic() >= ends_at:
            raise OutboundFailed(
                f"No complete answer within {overall:g} s ({type(exc).__name__})."
            ) from exc
        raise OutboundFailed(f"No answer within {timeout:g} s ({type(exc).__name__}).") from exc
    except _TRANSPORT_ERRORS as exc:
        raise OutboundFailed(excerpt(f"Connection failed: {exc!r}")) from exc
