"""lib.outbound: where this service may send, judged on the resolved address,
and the real resolve-and-connect path to a loopback server that
OUTBOUND_ALLOW_LOOPBACK allows."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lib import outbound
from lib.outbound import OutboundFailed, OutboundRefused
from tests.harness.services import FakeService, Reply, free_port
from tests.harness.streaming import BOMB_SIZE, StreamingService, bomb_pieces


@pytest.fixture
def service():
    with FakeService() as fake:
        yield fake


def resolving_to(monkeypatch, *addresses: str) -> None:
    def getaddrinfo(host, port, *args, **kwargs):
        family = {4: socket.AF_INET, 6: socket.AF_INET6}
        return [
            (family[4 if "." in a and ":" not in a else 6], socket.SOCK_STREAM, 6, "", (a, port))
            for a in addresses
        ]

    monkeypatch.setattr("lib.outbound.socket.getaddrinfo", getaddrinfo)


# --- the real path to a loopback server ------------------------------------------------


def test_a_loopback_server_is_reached_when_loopback_is_allowed(settings, service):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    service.reply_with(Reply(200, "ok"))

    response = outbound.post(service.url, json={"text": "hello"}, timeout=2)

    assert (response.status_code, response.text) == (200, "ok")
    (received,) = service.wait_for_requests(1)
    assert received.body == {"text": "hello"}
    assert received.headers["User-Agent"] == outbound.USER_AGENT
    assert received.headers["Accept-Encoding"] == "identity"


def test_sends_share_one_ssl_context_per_process(settings, service, monkeypatch):
    """Loading the CA bundle costs about 18 ms of CPU: made once, not per send."""
    import httpx

    settings.OUTBOUND_ALLOW_LOOPBACK = True
    service.reply_with(Reply(200, "ok"))
    made = []
    real = httpx.create_ssl_context
    monkeypatch.setattr(httpx, "create_ssl_context", lambda **kw: made.append(1) or real(**kw))
    outbound._ssl_context.cache_clear()
    try:
        for _ in range(3):
            assert outbound.post(service.url, json={}, timeout=2).status_code == 200
    finally:
        outbound._ssl_context.cache_clear()
    assert len(made) == 1


def test_a_name_is_resolved_once_and_the_checked_address_is_connected_to(
    settings, service, monkeypatch
):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    port = service.server.server_port
    resolving_to(monkeypatch, "127.0.0.1")

    outbound.post(f"http://hooks.localhost:{port}/x", json={}, timeout=2)

    (received,) = service.wait_for_requests(1)
    assert received.headers["Host"] == f"hooks.localhost:{port}"  # the name, not the address


def test_the_same_server_is_refused_when_loopback_is_not_allowed(settings, service):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    with pytest.raises(OutboundRefused, match="loopback"):
        outbound.post(service.url, json={}, timeout=2)
    assert service.requests == []


def test_redirects_are_not_followed(settings, service):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    service.reply_with(Reply(302, "", headers={"Location": "http://169.254.169.254/"}))

    response = outbound.post(service.url, json={}, timeout=2)

    assert response.is_redirect and response.status_code == 302
    assert len(service.requests) == 1


def test_at_most_max_bytes_of_the_answer_are_kept(settings, service):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    service.reply_with(Reply(500, "x" * 100_000))

    response = outbound.post(service.url, json={}, timeout=2, max_bytes=1024)

    assert response.status_code == 500 and len(response.content) == 1024


def test_a_closed_port_is_a_failure_to_retry_not_a_refusal(settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with pytest.raises(OutboundFailed, match="Connection failed"):
        outbound.post(f"http://127.0.0.1:{free_port()}/x", json={}, timeout=2)


def test_retry_after_is_read_in_seconds(settings, service):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    service.reply_with(Reply(429, "slow down", headers={"Retry-After": "120"}))
    assert outbound.post(service.url, json={}, timeout=2).retry_after == 120.0


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(400, False), (404, False), (408, True), (410, False), (429, True), (500, True), (503, True)],
)
def test_only_timeouts_throttling_and_server_errors_are_worth_retrying(status, retryable):
    assert outbound.is_retryable_status(status) is retryable


# --- refusals ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://10.1.2.3/x",  # private
        "https://192.168.0.10/x",  # private
        "https://[fd00:ec2::254]/x",  # unique local (a cloud's IPv6 metadata)
        "https://169.254.169.254/latest/meta-data",  # link-local: cloud metadata
        "https://[fe80::1]/x",  # link-local
        "https://100.100.100.200/x",  # shared (CGNAT): another cloud's metadata
        "https://224.0.0.1/x",  # multicast
        "https://240.0.0.1/x",  # reserved
        "https://0.0.0.0/x",  # unspecified
        "https://[::ffff:10.0.0.1]/x",  # IPv4-mapped private
        "https://[::ffff:169.254.169.254]/x",  # IPv4-mapped metadata
        "http://hooks.slack.com/x",  # plain HTTP off loopback
        "ftp://hooks.slack.com/x",
        "https:///no-host",
    ],
)
def test_these_are_refused_even_with_loopback_allowed(settings, url):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with pytest.raises(OutboundRefused):
        outbound.post(url, json={}, timeout=1)


@pytest.mark.parametrize(
    "url",
    ["https://127.0.0.1/x", "https://[::1]/x", "https://localhost/x", "http://[::ffff:127.0.0.1]/"],
)
def test_loopback_is_refused_in_production(settings, url):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    with pytest.raises(OutboundRefused):
        outbound.check_url(url)


@pytest.mark.parametrize(
    "addresses",
    [("192.168.1.20",), ("93.184.215.14", "10.0.0.5"), ("::ffff:192.168.1.1",), ("100.64.0.1",)],
)
def test_a_name_is_judged_by_every_address_it_resolves_to(settings, monkeypatch, addresses):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    resolving_to(monkeypatch, *addresses)
    with pytest.raises(OutboundRefused, match="resolves to"):
        outbound.post("https://hooks.example.com/x", json={}, timeout=1)


def test_a_name_that_does_not_resolve_is_a_failure_to_retry(settings, monkeypatch):
    def no_such_name(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(outbound.socket, "getaddrinfo", no_such_name)
    with pytest.raises(OutboundFailed, match="Cannot resolve"):
        outbound.post("https://hooks.example.com/x", json={}, timeout=1)


def test_a_public_https_url_passes_the_static_check(settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    assert outbound.check_url("https://hooks.slack.com/services/T/B/x").hostname == (
        "hooks.slack.com"
    )


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("localhost:3000", True),
        ("app.localhost", True),
        ("127.0.0.5:80", True),
        ("[::1]:3000", True),
        ("example.com", False),
        ("10.0.0.1", False),
        ("[::ffff:10.0.0.1]", False),
    ],
)
def test_loopback_hosts_are_told_apart(host, loopback):
    assert outbound.is_loopback_host(host) is loopback


# --- answers that would exhaust memory or time ----------------------------------------


def test_a_gzip_bomb_is_read_only_up_to_the_cap_and_never_decompressed(settings):
    import tracemalloc

    settings.OUTBOUND_ALLOW_LOOPBACK = True
    head = (
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n"
        b"Content-Encoding: gzip\r\nContent-Length: " + str(BOMB_SIZE).encode() + b"\r\n\r\n"
    )
    with StreamingService(head, bomb_pieces) as service:
        tracemalloc.start()
        try:
            response = outbound.post(service.url, json={}, timeout=5)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()

    assert response.status_code == 500
    assert len(response.content) <= outbound.MAX_RESPONSE_BYTES
    assert response.content.startswith(b"\x1f\x8b")  # still gzip: not decompressed
    # The TLS context and the client take about 1.5 MiB whatever the answer;
    # reading the 10 MiB sent, or decompressing it, would take far more.
    assert peak < 4 * 1024 * 1024
    assert not service.finished.is_set()  # the rest was never read


def test_a_server_that_trickles_its_headers_is_cut_off_at_the_deadline(settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True

    def header_bytes_forever():
        while True:
            yield b"X"

    head = b"HTTP/1.1 200 OK\r\nX-Slow: "
    # Each byte comes well within the per-read timeout (1 s); only the overall
    # deadline (2 s) can end the call before the server gives up (30 s).
    with StreamingService(head, header_bytes_forever, pause=0.2) as service:
        with pytest.raises(OutboundFailed, match="No complete answer within 2 s"):
            outbound.post(service.url, json={}, timeout=1, deadline=2)
        assert not service.finished.is_set()


def test_a_server_that_trickles_its_body_is_cut_off_at_the_deadline(settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True

    def body_bytes_forever():
        while True:
            yield b"x"

    head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n"
    with StreamingService(head, body_bytes_forever, pause=0.2) as service:
        response = outbound.post(service.url, json={}, timeout=1, deadline=2)
        assert not service.finished.is_set()

    assert response.status_code == 200  # the status came in time
    assert 0 < len(response.content) < 1000


# --- 6to4, credentials and unsendable characters (issue 16, points 4 and 8) ------------


@pytest.mark.parametrize(
    "address",
    ["2002:a9fe:a9fe::", "2002:a00:1::", "2002:7f00:1::1", "2002:5db8:d70e::"],
)
def test_every_6to4_address_is_refused_whatever_ipv4_it_embeds(address):
    """2002:a9fe:a9fe:: is 169.254.169.254 (cloud metadata) through a 6to4
    relay; 6to4 is deprecated (RFC 7526), so the whole 2002::/16 is refused,
    a public embedded address included."""
    import ipaddress

    reason = outbound.address_refusal(ipaddress.ip_address(address), allow_loopback=True)

    assert reason == "a 6to4 address"


def test_a_6to4_address_is_refused_written_in_the_url_and_as_what_a_name_resolves_to(
    settings, monkeypatch
):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with pytest.raises(OutboundRefused, match="6to4"):
        outbound.post("https://[2002:a9fe:a9fe::]/latest/meta-data", json={}, timeout=1)
    resolving_to(monkeypatch, "2002:a9fe:a9fe::")
    with pytest.raises(outbound.AddressRefused, match="6to4"):
        outbound.post("https://hooks.example.com/x", json={}, timeout=1)


@pytest.mark.parametrize(
    "url",
    [
        "https://user:pw@hooks.example.com/x",
        "https://token@hooks.example.com/x",
        "https://hooks.example.com/a b",
        "https://hooks.example.com/x\tx",
        "https://hooks.example.com/x\n",
        "https://hooks.example.com/x\r\nX-Injected: 1",
        "https://hooks.example.com/x\x00",
        "https://hooks.example.com/x\x7f",
        "https://hooks.example.com/x\x85",
        "https://hooks.example.com/x\u2028",
        "https://hooks.example.com/x\u00a0",
    ],
)
def test_credentials_whitespace_and_control_characters_are_refused(settings, url):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with pytest.raises(OutboundRefused):
        outbound.check_url(url)


# --- name resolution under the deadline (issue 16, point 7) -----------------------------


class SlowResolver:
    """getaddrinfo (the seam lib.outbound resolves through) that answers only
    when released, or after 10 s; says whether it had answered."""

    def __init__(self, monkeypatch) -> None:
        import threading

        self.release = threading.Event()
        self.answered = threading.Event()
        monkeypatch.setattr("lib.outbound.socket.getaddrinfo", self)

    def __call__(self, host, port, *args, **kwargs):
        self.release.wait(timeout=10)
        self.answered.set()
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", port))]


@pytest.fixture
def slow_resolver(monkeypatch):
    resolver = SlowResolver(monkeypatch)
    yield resolver
    resolver.release.set()


def test_a_slow_resolver_is_cut_off_by_the_send_deadline(settings, slow_resolver):
    settings.OUTBOUND_ALLOW_LOOPBACK = False

    with pytest.raises(outbound.ResolutionFailed, match="no answer within"):
        outbound.post("https://hooks.example.com/x", json={}, timeout=0.2, deadline=0.3)

    # The call gave up while the resolver was still working, not after it.
    assert not slow_resolver.answered.is_set()


def test_a_slow_resolver_is_cut_off_when_a_url_is_checked_for_a_form(settings, slow_resolver):
    settings.OUTBOUND_ALLOW_LOOPBACK = False

    with pytest.raises(outbound.ResolutionFailed):
        outbound.check_destination("https://hooks.example.com/x", timeout=0.2)

    assert not slow_resolver.answered.is_set()


def test_the_time_spent_resolving_counts_against_the_deadline(settings, monkeypatch):
    """A resolver that takes most of the deadline leaves only the rest for
    the connection: the whole call still ends by the deadline."""
    import time

    settings.OUTBOUND_ALLOW_LOOPBACK = True
    seen: list[float] = []

    def slow_then_loopback(host, port, *args, **kwargs):
        time.sleep(0.3)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        seen.append(outbound._deadline() - time.monotonic())
        raise outbound.httpcore.ConnectError("refused")

    monkeypatch.setattr(outbound.socket, "getaddrinfo", slow_then_loopback)
    monkeypatch.setattr(outbound._DeadlineBackend, "connect_tcp", connect_tcp)

    with pytest.raises(OutboundFailed):
        outbound.post("http://hooks.localhost/x", json={}, timeout=5, deadline=1)

    # What was left for connecting: the deadline minus the 0.3 s of resolving.
    assert seen and seen[0] <= 0.75


def test_an_address_written_as_the_host_is_checked_without_a_resolver_thread(monkeypatch):
    def no_thread(*args, **kwargs):
        raise AssertionError("a thread was started to resolve an address")

    monkeypatch.setattr(outbound.threading, "Thread", no_thread)
    assert str(outbound.resolve("127.0.0.1", 80, allow_loopback=True)) == "127.0.0.1"
    assert str(outbound.resolve("::1", 80, allow_loopback=True)) == "::1"
    with pytest.raises(outbound.AddressRefused):
        outbound.resolve("10.0.0.1", 80, allow_loopback=False)


# --- kept-alive connections and what goes on the wire ---------------------------------


class _KeptAliveServer:
    """An HTTP/1.1 server on 127.0.0.1 that keeps each connection open and
    notes, for each POST, the client's port (one per connection), the
    request target and the header lines as they came."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, str, list[tuple[str, str]]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.seen.append((self.client_address[1], self.path, list(self.headers.items())))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.http.server_port}"

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def kept_alive():
    outbound.close_connections()
    server = _KeptAliveServer()
    yield server
    outbound.close_connections()
    server.close()


def test_sends_to_one_receiver_share_one_kept_alive_connection(settings, kept_alive):
    settings.OUTBOUND_ALLOW_LOOPBACK = True

    for n in range(5):
        assert outbound.post(f"{kept_alive.url}/hook", json={"n": n}, timeout=2).status_code == 200

    assert len(kept_alive.seen) == 5
    assert len({port for port, _, _ in kept_alive.seen}) == 1


def test_each_header_is_sent_once_and_the_caller_s_win_whatever_their_case(settings, kept_alive):
    settings.OUTBOUND_ALLOW_LOOPBACK = True

    outbound.post(
        f"{kept_alive.url}/hook",
        json={"a": 1},
        headers={"content-type": "application/cloudevents+json", "user-agent": "theirs"},
        timeout=2,
    )

    ((_, _, lines),) = kept_alive.seen
    names = [name.lower() for name, _ in lines]
    assert len(names) == len(set(names))
    sent = {name.lower(): value for name, value in lines}
    assert sent["content-type"] == "application/cloudevents+json"
    assert sent["user-agent"] == "theirs"
    assert sent["content-length"] == str(len(b'{"a":1}'))
    assert sent["accept-encoding"] == "identity"


def test_the_path_and_query_go_percent_encoded_as_canonical_url_stores_them(settings, kept_alive):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    url = f"{kept_alive.url}/hooks/ünïcode?team=ä&x=1#fragment"

    outbound.post(url, json={}, timeout=2)

    ((_, target, _),) = kept_alive.seen
    assert target == "/hooks/%C3%BCn%C3%AFcode?team=%C3%A4&x=1"
    assert outbound.canonical_url(url).endswith(target)


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
def test_an_ipv6_address_goes_in_brackets_in_the_host_header(settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6

    hosts = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            hosts.append(self.headers["Host"])
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = Server(("::1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        response = outbound.post(f"http://[::1]:{server.server_port}/hook", json={}, timeout=2)
    finally:
        server.shutdown()
        server.server_close()

    assert response.status_code == 200
    assert hosts == [f"[::1]:{server.server_port}"]
