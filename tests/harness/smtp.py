"""A local SMTP sink: a server on 127.0.0.1 that accepts every message sent to it
over plain SMTP (no TLS, no authentication) and keeps it, for a test whose
process under test sends real mail through `django.core.mail.backends.smtp`
(the production image's backend) rather than a file or memory backend.

It speaks the part of RFC 5321 that Python's smtplib (and so Django) uses:
EHLO/HELO, MAIL, RCPT, DATA with dot-unstuffing, RSET, NOOP, QUIT. Standard
library only (smtpd left Python in 3.12)."""

from __future__ import annotations

import socketserver
import threading
import time
from dataclasses import dataclass
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any


@dataclass
class Delivered:
    """One message as the sink received it: the envelope and the parsed message."""

    sender: str
    recipients: list[str]
    message: EmailMessage
    received_at: float  # time.monotonic() when the final "." arrived


class SmtpSink:
    """`with SmtpSink() as sink:` serves on `sink.port`; `sink.wait_for(count)`
    returns the first `count` messages once they have arrived."""

    def __init__(self) -> None:
        self.messages: list[Delivered] = []
        self._cond = threading.Condition()
        sink = self

        class Handler(socketserver.StreamRequestHandler):
            timeout = 30

            def reply(self, line: str) -> None:
                self.wfile.write(line.encode() + b"\r\n")
                self.wfile.flush()

            def handle(self) -> None:
                self.reply("220 sink.localhost ESMTP test sink")
                sender, recipients = "", list[str]()
                while True:
                    raw = self.rfile.readline()
                    if not raw:
                        return
                    command = raw.decode("ascii", "replace").strip()
                    verb = command[:4].upper()
                    if verb == "EHLO":
                        self.reply("250-sink.localhost")
                        self.reply("250 8BITMIME")
                    elif verb == "HELO":
                        self.reply("250 sink.localhost")
                    elif verb == "MAIL":
                        sender, recipients = _address(command), list[str]()
                        self.reply("250 OK")
                    elif verb == "RCPT":
                        recipients.append(_address(command))
                        self.reply("250 OK")
                    elif verb == "DATA":
                        self.reply("354 End data with <CR><LF>.<CR><LF>")
                        lines = []
                        while True:
                            line = self.rfile.readline()
                            if not line or line in (b".\r\n", b".\n"):
                                break
                            line = line[1:] if line.startswith(b"..") else line
                            lines.append(line.removesuffix(b"\r\n").removesuffix(b"\n") + b"\n")
                        message = message_from_bytes(b"".join(lines), policy=policy.default)
                        with sink._cond:
                            sink.messages.append(
                                Delivered(sender, recipients, message, time.monotonic())
                            )
                            sink._cond.notify_all()
                        self.reply("250 OK: queued")
                    elif verb in ("RSET", "NOOP"):
                        if verb == "RSET":
                            sender, recipients = "", list[str]()
                        self.reply("250 OK")
                    elif verb == "QUIT":
                        self.reply("221 Bye")
                        return
                    else:
                        self.reply("502 Command not implemented")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        port: int = self.server.server_address[1]
        return port

    def wait_for(self, count: int, timeout: float = 30) -> list[Delivered]:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.messages) >= count, timeout=timeout):
                raise AssertionError(
                    f"the SMTP sink received {len(self.messages)} message(s), "
                    f"expected {count}, in {timeout} s"
                )
            return list(self.messages[:count])

    def __enter__(self) -> SmtpSink:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def _address(command: str) -> str:
    """The address between the angle brackets of `MAIL FROM:<a>` or `RCPT TO:<a>`."""
    start, end = command.find("<"), command.find(">")
    return command[start + 1 : end] if 0 <= start < end else command.partition(":")[2].strip()
