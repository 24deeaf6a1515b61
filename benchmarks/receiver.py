"""The outbound webhooks' local receiver, for the benchmark (benchmarks/run.py)
and the fault run (benchmarks/faults.py)."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """Answers POSTs 200, at once or `delay` seconds late when set (a slow or
    hanging receiver). Notes each POST's arrival and answer times and its
    webhook id."""

    def __init__(self) -> None:
        self.times: list[float] = []  # answered
        self.arrivals: list[float] = []  # arrived (an attempt made)
        self.ids: list[str] = []
        self.delay = 0.0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            # Keeps the connection open between requests, as receivers do;
            # the answer's headers and body go in one write (no delayed ACK).
            protocol_version = "HTTP/1.1"
            wbufsize = 64 * 1024

            def do_POST(self) -> None:
                receiver.arrivals.append(time.monotonic())
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if receiver.delay:
                    time.sleep(receiver.delay)
                receiver.times.append(time.monotonic())
                receiver.ids.append(self.headers.get("Webhook-Id") or "")
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

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
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
