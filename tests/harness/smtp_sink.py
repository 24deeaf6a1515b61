"""A local SMTP server that accepts every message: the mail server the
worker's e-mail transport talks to in tests and benchmarks, on loopback.

Counts connections and notes each message's Message-ID (the delivery id the
transport derives it from), so a test can say how many connections a batch
took and that no delivery arrived twice. Speaks just enough SMTP for
smtplib (EHLO, MAIL, RCPT, DATA, RSET, NOOP, QUIT); no TLS, no auth.
"""

from __future__ import annotations

import re
import socketserver
import threading
import time
from email.parser import BytesHeaderParser


class SmtpSink:
    def __init__(self, *, refuse: str = "", mail_delay: float = 0.0) -> None:
        # RCPT TO of an address containing `refuse` answers 550 (refused).
        self.refuse = refuse
        # Seconds before answering MAIL FROM (a slow server): a message is
        # begun (`mails_started`) a moment before anything of it is sent.
        self.mail_delay = mail_delay
        self.mails_started = 0
        self.connections = 0
        self.message_ids: list[str] = []
        self.recipients: list[str] = []
        self.lock = threading.Lock()
        sink = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                with sink.lock:
                    sink.connections += 1
                self._reply(b"220 sink ESMTP")
                rcpt: list[str] = []
                while True:
                    line = self.rfile.readline()
                    if not line:
                        return
                    verb = line[:4].upper()
                    if verb in (b"EHLO", b"HELO"):
                        self._reply(b"250 sink")
                    elif verb == b"MAIL":
                        rcpt = []
                        with sink.lock:
                            sink.mails_started += 1
                        if sink.mail_delay:
                            time.sleep(sink.mail_delay)
                        self._reply(b"250 OK")
                    elif verb == b"RCPT":
                        address = line.decode(errors="replace")
                        if sink.refuse and sink.refuse in address:
                            self._reply(b"550 No such user")
                        else:
                            found = re.search(r"<([^>]*)>", address)
                            rcpt.append(found.group(1) if found else address.strip())
                            self._reply(b"250 OK")
                    elif verb == b"DATA":
                        self._reply(b"354 End data with <CR><LF>.<CR><LF>")
                        data = bytearray()
                        while True:
                            chunk = self.rfile.readline()
                            if not chunk or chunk in (b".\r\n", b".\n"):
                                break
                            data += chunk
                        headers = BytesHeaderParser().parsebytes(bytes(data))
                        with sink.lock:
                            sink.message_ids.append(str(headers.get("Message-ID", "")))
                            sink.recipients.extend(rcpt)
                        self._reply(b"250 OK queued")
                    elif verb == b"QUIT":
                        self._reply(b"221 Bye")
                        return
                    else:  # RSET, NOOP, anything else
                        self._reply(b"250 OK")

            def _reply(self, text: bytes) -> None:
                self.wfile.write(text + b"\r\n")
                self.wfile.flush()

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def __enter__(self) -> SmtpSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def env(self) -> dict[str, str]:
        """The settings that send mail here (the SMTP backend)."""
        return {
            "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "EMAIL_HOST": "127.0.0.1",
            "EMAIL_PORT": str(self.port),
        }

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
