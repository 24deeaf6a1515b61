"""A mail server that accepts every message, for the sustained run
(benchmarks/sustained.py) and the several-hosts run (benchmarks/hosts.py):
the workers send their nudges to it over real SMTP (Django's SMTP backend,
as production does). It keeps no mail, only each message's Message-ID (a
nudge's is `<nudge-<delivery id>@...>`, the same on every attempt: a second
copy is a duplicate send of one delivery), the client's address (which host
sent it) and its arrival time (time.monotonic, the clock every process on the
machine shares); `on_message(arrival, data)` sees each message's bytes.

Plain SMTP (RFC 5321) without TLS or authentication: EHLO/HELO, MAIL, RCPT,
DATA (the lone dot ends it; a leading dot is unstuffed), RSET, NOOP, QUIT.
It runs an asyncio loop in a thread of the process that starts it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from email.parser import BytesHeaderParser

MAX_LINE = 1 << 20  # bytes a line may have (a mail's lines are at most 998)


class SmtpSink:
    """Accepts every message on `host`; `messages` holds each one's
    {"message_id", "peer", "time"}, and `on_message(arrival, data)`, when
    set, is called with each as it comes."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        on_message: Callable[[float, bytes], None] | None = None,
    ) -> None:
        self.messages: list[dict] = []
        self.host = host
        self.on_message = on_message
        self.sessions = 0
        self.loop = asyncio.new_event_loop()
        self.port = 0
        ready = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(self.loop)
            server = self.loop.run_until_complete(
                asyncio.start_server(self._session, host, 0, limit=MAX_LINE)
            )
            self.port = server.sockets[0].getsockname()[1]
            self._server = server
            ready.set()
            self.loop.run_forever()
            server.close()
            self.loop.run_until_complete(server.wait_closed())

        self.thread = threading.Thread(target=serve, name="smtp-sink", daemon=True)
        self.thread.start()
        ready.wait(10)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.sessions += 1
        try:
            writer.write(b"220 localhost bench SMTP sink\r\n")
            await writer.drain()
            while True:
                line = await reader.readline()
                if not line:
                    return
                verb = line[:4].upper()
                if verb == b"EHLO":
                    writer.write(b"250-localhost\r\n250-8BITMIME\r\n250-SMTPUTF8\r\n250 SIZE 0\r\n")
                elif verb == b"HELO":
                    writer.write(b"250 localhost\r\n")
                elif verb in (b"MAIL", b"RCPT", b"RSET", b"NOOP"):
                    writer.write(b"250 OK\r\n")
                elif verb == b"DATA":
                    writer.write(b"354 End data with <CR><LF>.<CR><LF>\r\n")
                    await writer.drain()
                    data = await read_data(reader)
                    if data is None:
                        return
                    self._keep(time.monotonic(), data, writer.get_extra_info("peername")[0])
                    writer.write(b"250 OK queued\r\n")
                elif verb == b"QUIT":
                    writer.write(b"221 Bye\r\n")
                    await writer.drain()
                    return
                else:
                    writer.write(b"502 Command not implemented\r\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return
        finally:
            writer.close()

    def _keep(self, arrival: float, data: bytes, peer: str) -> None:
        headers = BytesHeaderParser().parsebytes(data, headersonly=True)
        self.messages.append(
            {"message_id": headers.get("Message-ID", ""), "peer": peer, "time": arrival}
        )
        if self.on_message is not None:
            self.on_message(arrival, data)


async def read_data(reader: asyncio.StreamReader) -> bytes | None:
    """A message's lines up to the lone dot, dot-unstuffed, CRLF kept;
    None if the connection ended first."""
    lines: list[bytes] = []
    while True:
        line = await reader.readline()
        if not line:
            return None
        if line in (b".\r\n", b".\n"):
            return b"".join(lines)
        lines.append(line[1:] if line.startswith(b".") else line)
