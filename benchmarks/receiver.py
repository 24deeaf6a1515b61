"""The outbound webhooks' local receiver, for the benchmark (benchmarks/run.py),
the fault run (benchmarks/faults.py) and the several-hosts run
(benchmarks/hosts.py, where it listens on the hosts' bridge)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """Answers POSTs 200, at once or `delay` seconds late when set (a slow or
    hanging receiver). Notes each POST's arrival and answer times and its
    webhook id, and how many POSTs are in flight from each client address
    (`in_flight_from`: on the bridge, which host is sending).
    `on_post(arrival, body)`, when set, is called with each POST's body as it
    has been read (the sustained run correlates them)."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.times: list[float] = []  # answered
        self.arrivals: list[float] = []  # arrived (an attempt made)
        self.ids: list[str] = []
        self.peers: list[str] = []  # the client address of each answered POST, as `ids`
        self.delay = 0.0
        self.on_post: Callable[[float, bytes], None] | None = None
        self.in_flight_from: dict[str, int] = {}
        lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            # Keeps the connection open between requests, as receivers do;
            # the answer's headers and body go in one write (no delayed ACK).
            protocol_version = "HTTP/1.1"
            wbufsize = 64 * 1024

            def do_POST(self) -> None:
                receiver.arrivals.append(time.monotonic())
                peer = self.client_address[0]
                with lock:
                    receiver.in_flight_from[peer] = receiver.in_flight_from.get(peer, 0) + 1
                try:
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    if receiver.on_post is not None:
                        receiver.on_post(time.monotonic(), body)
                    if receiver.delay:
                        time.sleep(receiver.delay)
                finally:
                    with lock:
                        receiver.in_flight_from[peer] -= 1
                receiver.times.append(time.monotonic())
                receiver.ids.append(self.headers.get("Webhook-Id") or "")
                receiver.peers.append(peer)
                try:
                    self.send_response(200)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                    self.wfile.flush()
                except OSError:
                    pass  # the sender gave up (its timeout)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/hook"

    def received_between(self, start: float, end: float) -> int:
        return sum(1 for t in list(self.times) if start <= t <= end)

    def arrived_between(self, start: float, end: float) -> int:
        return sum(1 for t in list(self.arrivals) if start <= t <= end)

    @property
    def in_flight(self) -> int:
        return len(self.arrivals) - len(self.times)
