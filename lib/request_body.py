"""A request's body read off the wire: where to read it from, and reading it in
pieces without holding it all in memory.

The API's middleware (`config.middleware.read_bounded_body`) reads bodies of
at most 1 MiB whole; a route that takes larger ones (the tracker hooks) reads
its body itself with `read_spooled`: each piece is handed to a consumer (a
signature check) as it arrives, hashed, and kept in memory up to a threshold,
then in a temporary file, and not kept at all past a limit.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from django.http import HttpRequest

CHUNK = 64 * 1024
# A body is held in memory up to this size, then in a temporary file.
IN_MEMORY_UP_TO = 1024 * 1024


class Unreadable(Exception):
    """The body cannot be read (a chunked body the server cannot end, a client
    that went away); the message says which, for a 400."""


def declared_length(request: HttpRequest) -> int:
    """The request's Content-Length, 0 when absent or malformed."""
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0


def body_stream(request: HttpRequest) -> Any:
    """The stream the body is read from.

    A chunked body (no Content-Length) under WSGI: Django would read nothing
    (it trusts only Content-Length), so it is read from the server's stream
    when the server promises that stream ends (`wsgi.input_terminated`, as
    gunicorn does); otherwise (the development server) `Unreadable`, rather
    than an empty body. Under ASGI Django has the whole body already.
    """
    chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    if not declared_length(request) and chunked and "wsgi.input" in request.META:
        if not request.META.get("wsgi.input_terminated"):
            raise Unreadable(
                "This server cannot read a chunked body: send it with a Content-Length header."
            )
        return request.META["wsgi.input"]
    return request


@dataclass
class SpooledBody:
    """What `read_spooled` read. `size` is the bytes read, or the declared
    length when the body was refused unread; `complete` whether the body was
    read to its end (then `sha256` is its digest); `kept` whether it is held
    (`read()` returns it): only when complete and within `keep_up_to`."""

    size: int
    complete: bool
    sha256: str | None
    _file: IO[bytes] | None

    @property
    def kept(self) -> bool:
        return self._file is not None

    def read(self) -> bytes:
        if self._file is None:
            raise ValueError("the body was not kept")
        self._file.seek(0)
        return self._file.read()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_spooled(
    request: HttpRequest,
    *,
    keep_up_to: int,
    read_up_to: int,
    consume: Callable[[bytes], None] | None = None,
    in_memory_up_to: int = IN_MEMORY_UP_TO,
) -> SpooledBody:
    """Read the body in pieces of `CHUNK` bytes, each handed to `consume` and
    to a SHA-256 as it arrives. A body of at most `keep_up_to` bytes is kept
    (in memory up to `in_memory_up_to`, then in a temporary file); a larger one
    is read on, kept nowhere, up to `read_up_to` bytes (so that `consume` sees
    all of it), and past that is left unread. A declared length over
    `read_up_to` is refused without reading a byte. Raises `Unreadable`."""
    stream = body_stream(request)
    declared = declared_length(request)
    if declared > read_up_to:
        return SpooledBody(size=declared, complete=False, sha256=None, _file=None)
    keep = declared <= keep_up_to
    # Handed to the caller open (SpooledBody.close), so not a `with` block.
    spool: IO[bytes] | None = (
        tempfile.SpooledTemporaryFile(max_size=in_memory_up_to)  # noqa: SIM115
        if keep
        else None
    )
    digest = hashlib.sha256()
    size = 0
    try:
        while True:
            # Never more than one byte past the limit: a body longer than it
            # declared (or without a length) is caught there.
            piece = stream.read(min(CHUNK, read_up_to + 1 - size))
            if not piece:
                break
            size += len(piece)
            if size > read_up_to:
                if spool is not None:
                    spool.close()
                return SpooledBody(size=size, complete=False, sha256=None, _file=None)
            digest.update(piece)
            if consume is not None:
                consume(piece)
            if spool is not None and size > keep_up_to:
                spool.close()
                spool = None
            if spool is not None:
                spool.write(piece)
    except OSError as exc:  # UnreadablePostError, a client that went away
        if spool is not None:
            spool.close()
        raise Unreadable("The request body could not be read.") from exc
    return SpooledBody(size=size, complete=True, sha256=digest.hexdigest(), _file=spool)
