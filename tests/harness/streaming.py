"""A loopback HTTP server that writes its answer piece by piece, and a gzip
bomb to feed it: for the tests of what an outbound call reads."""

from __future__ import annotations


class StreamingService:
    """A loopback HTTP server whose answer is written piece by piece: the
    status line and headers, then the body from `pieces`, each after
    `pause` seconds. It stops writing when the client goes away or after
    `give_up` seconds; `finished` is set if it wrote everything."""

    def __init__(self, head: bytes, pieces, *, pause: float = 0.0, give_up: float = 30) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.finished = threading.Event()
        self.client_left = threading.Event()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                import time

                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                stop_at = time.monotonic() + give_up
                try:
                    self.wfile.write(head)
                    self.wfile.flush()
                    for piece in pieces():
                        if time.monotonic() > stop_at:
                            return
                        if pause:
                            time.sleep(pause)
                        self.wfile.write(piece)
                        self.wfile.flush()
                except OSError:
                    service.client_left.set()
                    return
                service.finished.set()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/services/T000/B000/secret"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def gzip_bomb_member() -> bytes:
    """One gzip member holding 1 MiB of zeros (about 1 KiB compressed)."""
    import gzip

    return gzip.compress(b"\0" * (1024 * 1024), compresslevel=9)


BOMB_SIZE = 10 * 1024 * 1024  # bytes on the wire: about 10 GiB once decompressed


def bomb_pieces():
    member = gzip_bomb_member()
    sent = 0
    while sent < BOMB_SIZE:
        piece = member[: BOMB_SIZE - sent]
        sent += len(piece)
        yield piece
