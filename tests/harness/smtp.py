"""A local SMTP sink: a server that accepts every message sent to it over plain
SMTP (no TLS, no authentication), for the tests and benchmarks whose process
under test sends real mail through `django.core.mail.backends.smtp` (the
production image's backend) rather than a file or memory backend: the image
test, the worker's batch tests, and the benchmarks' sendcost, sustained and
several-hosts runs (which take it from here, as they take the rest of the
harness).

It speaks the part of RFC 5321 that Python's smtplib (and so Django) uses:
EHLO/HELO, MAIL, RCPT, DATA with dot-unstuffing, RSET, NOOP, QUIT. It counts
connections and notes, for each message, the envelope, the Message-ID (a
nudge's is `<nudge-<delivery id>@...>`, the same on every attempt: a second
copy is a duplicate send of one delivery), the client's address (on a
bridge, which host sent it) and when it arrived (time.monotonic, the clock
every process on the machine shares). Standard library only (smtpd left
Python in 3.12).
"""

from __future__ import annotations

import re
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any


@dataclass
class Delivered:
    """One message as the sink received it."""

    sender: str
    recipients: list[str]
    data: bytes  # the message as sent, dot-unstuffed, CRLF kept
    received_at: float  # time.monotonic() when the final "." arrived
    peer: str  # the client's address
    message_id: str

    @property
    def message(self) -> EmailMessage:
        """The message parsed, its lines ending in a plain newline (parsed on
        asking: a benchmark's thousands are not)."""
        parsed = message_from_bytes(self.data.replace(b"\r\n", b"\n"), policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed


class SmtpSink:
    """`with SmtpSink() as sink:` serves on `sink.port` (of `host`);
    `sink.wait_for(count)` returns the first `count` messages once they have
    arrived. `refuse`: RCPT TO of an address containing it answers 550.
    `mail_delay`: seconds before answering MAIL FROM (a slow server; a message
    is begun, `mails_started`, a moment before anything of it is sent).
    `on_message(arrival, data)`, when set, sees each message as it comes."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        *,
        refuse: str = "",
        mail_delay: float = 0.0,
        on_message: Callable[[float, bytes], None] | None = None,
    ) -> None:
        self.host = host
        self.refuse = refuse
        self.mail_delay = mail_delay
        self.on_message = on_message
        self.messages: list[Delivered] = []
        self.connections = 0
        self.mails_started = 0
        self._cond = threading.Condition()
        sink = self

        class Handler(socketserver.StreamRequestHandler):
            timeout = 60

            def reply(self, line: str) -> None:
                self.wfile.write(line.encode() + b"\r\n")
                self.wfile.flush()

            def handle(self) -> None:
                with sink._cond:
                    sink.connections += 1
                self.reply("220 sink.localhost ESMTP test sink")
                sender, recipients = "", list[str]()
                while True:
                    raw = self.rfile.readline(65536)
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
                        with sink._cond:
                            sink.mails_started += 1
                        if sink.mail_delay:
                            time.sleep(sink.mail_delay)
                        self.reply("250 OK")
                    elif verb == "RCPT":
                        if sink.refuse and sink.refuse in command:
                            self.reply("550 No such user")
                        else:
                            recipients.append(_address(command))
                            self.reply("250 OK")
                    elif verb == "DATA":
                        self.reply("354 End data with <CR><LF>.<CR><LF>")
                        data = self.data()
                        sink._keep(sender, recipients, data, self.client_address[0])
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

            def data(self) -> bytes:
                lines: list[bytes] = []
                while True:
                    line = self.rfile.readline(1 << 20)
                    if not line or line in (b".\r\n", b".\n"):
                        return b"".join(lines)
                    lines.append(line[1:] if line.startswith(b".") else line)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server((host, 0), Handler)
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def _keep(self, sender: str, recipients: list[str], data: bytes, peer: str) -> None:
        arrival = time.monotonic()
        found = re.search(rb"^Message-ID:[ \t]*(.*?)\r?$", data, re.IGNORECASE | re.MULTILINE)
        message_id = found.group(1).decode("ascii", "replace").strip() if found else ""
        delivered = Delivered(sender, list(recipients), data, arrival, peer, message_id)
        with self._cond:
            self.messages.append(delivered)
            self._cond.notify_all()
        if self.on_message is not None:
            self.on_message(arrival, data)

    @property
    def port(self) -> int:
        port: int = self.server.server_address[1]
        return port

    @property
    def message_ids(self) -> list[str]:
        return [m.message_id for m in self.messages]

    @property
    def recipients(self) -> list[str]:
        return [address for m in self.messages for address in m.recipients]

    def env(self) -> dict[str, str]:
        """The settings that send mail here (the SMTP backend)."""
        return {
            "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "EMAIL_HOST": self.host,
            "EMAIL_PORT": str(self.port),
        }

    def wait_for(self, count: int, timeout: float = 30) -> list[Delivered]:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.messages) >= count, timeout=timeout):
                raise AssertionError(
                    f"the SMTP sink received {len(self.messages)} message(s), "
                    f"expected {count}, in {timeout} s"
                )
            return list(self.messages[:count])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    stop = close

    def __enter__(self) -> SmtpSink:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _address(command: str) -> str:
    """The address between the angle brackets of `MAIL FROM:<a>` or `RCPT TO:<a>`."""
    start, end = command.find("<"), command.find(">")
    return command[start + 1 : end] if 0 <= start < end else command.partition(":")[2].strip()
