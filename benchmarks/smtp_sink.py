"""A local SMTP sink for the several-hosts run (benchmarks/hosts.py): the mail
relay the service's SMTP backend delivers to, keeping no mail, only each
message's Message-ID (a nudge's is `<nudge-<delivery id>@...>`, the same on
every attempt: a second copy is a duplicate send of one delivery), the
client's address (which host sent it) and when. Speaks just the SMTP Django's
backend uses (EHLO or HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT; no TLS, no
authentication)."""

from __future__ import annotations

import socketserver
import threading
import time
from email.parser import BytesHeaderParser


class SmtpSink:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.messages: list[dict] = []  # {"message_id", "peer", "time"}
        sink = self

        class Handler(socketserver.StreamRequestHandler):
            timeout = 60

            def reply(self, line: str) -> None:
                self.wfile.write(line.encode() + b"\r\n")

            def handle(self) -> None:
                self.reply("220 sink ESMTP")
                while True:
                    line = self.rfile.readline(4096)
                    if not line:
                        return
                    verb = line[:4].upper()
                    if verb == b"EHLO":
                        self.reply("250-sink")
                        self.reply("250 8BITMIME")
                    elif verb == b"DATA":
                        self.reply("354 End data with <CR><LF>.<CR><LF>")
                        sink.keep(self.data(), self.client_address[0])
                        self.reply("250 OK")
                    elif verb == b"QUIT":
                        self.reply("221 Bye")
                        return
                    elif verb in (b"HELO", b"MAIL", b"RCPT", b"RSET", b"NOOP"):
                        self.reply("250 OK")
                    else:
                        self.reply("502 Not implemented")

            def data(self) -> bytes:
                lines: list[bytes] = []
                while True:
                    line = self.rfile.readline(65536)
                    if not line or line in (b".\r\n", b".\n"):
                        return b"".join(lines)
                    lines.append(line[1:] if line.startswith(b"..") else line)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server((host, 0), Handler)
        self.host, self.port = host, self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def keep(self, data: bytes, peer: str) -> None:
        headers = BytesHeaderParser().parsebytes(data)
        self.messages.append(
            {"message_id": headers.get("Message-ID", ""), "peer": peer, "time": time.monotonic()}
        )

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
