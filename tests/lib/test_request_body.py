"""lib.request_body.read_spooled: a body read in pieces, each handed on as it
arrives, held in memory only up to a threshold, not kept past a limit, and
not read at all when its declared length is over what may be read."""

from __future__ import annotations

import hashlib
import io
import tracemalloc

import pytest
from django.test import RequestFactory

from lib.request_body import Unreadable, read_spooled


def _request(body: bytes, **meta):
    request = RequestFactory().post("/api/v1/hooks/x", data=body, content_type="text/plain")
    request.META.update(meta)
    return request


def test_each_piece_is_handed_on_and_the_digest_is_of_the_whole_body():
    body = bytes(range(256)) * 1000  # 256,000 bytes: several pieces
    pieces: list[bytes] = []
    read = read_spooled(_request(body), keep_up_to=10**6, read_up_to=10**6, consume=pieces.append)
    assert len(pieces) > 1
    assert b"".join(pieces) == body
    assert (read.complete, read.kept, read.size) == (True, True, len(body))
    assert read.sha256 == hashlib.sha256(body).hexdigest()
    assert read.read() == body
    read.close()


def test_a_large_body_is_never_held_in_memory_whole():
    body = b"a" * (12 * 1024 * 1024)
    request = _request(body)
    tracemalloc.start()
    try:
        read = read_spooled(
            request, keep_up_to=len(body), read_up_to=len(body), in_memory_up_to=1024 * 1024
        )
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The spool rolled over to a temporary file at 1 MiB: the peak is that
    # threshold and a piece or two, not the 12 MiB.
    assert peak < 3 * 1024 * 1024, peak
    assert read.kept and read.complete
    assert read.read() == body
    read.close()


def test_a_body_over_the_keep_limit_is_read_to_its_end_but_not_kept():
    body = b"b" * 50_000
    pieces: list[bytes] = []
    read = read_spooled(
        _request(body), keep_up_to=10_000, read_up_to=100_000, consume=pieces.append
    )
    assert (read.complete, read.kept, read.size) == (True, False, 50_000)
    assert b"".join(pieces) == body
    assert read.sha256 == hashlib.sha256(body).hexdigest()
    with pytest.raises(ValueError):
        read.read()


def test_a_declared_length_over_the_read_limit_is_refused_unread():
    body = b"c" * 50_000
    request = _request(body)
    pieces: list[bytes] = []
    read = read_spooled(request, keep_up_to=1000, read_up_to=2000, consume=pieces.append)
    assert (read.complete, read.kept, read.size, read.sha256) == (False, False, 50_000, None)
    assert pieces == []


def test_a_body_longer_than_declared_stops_one_byte_past_the_limit():
    # A chunked body under a server that ends its stream (gunicorn): no length.
    body = b"d" * 50_000
    request = _request(
        b"",
        CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked",
        **{"wsgi.input": io.BytesIO(body), "wsgi.input_terminated": True},
    )
    read = read_spooled(request, keep_up_to=1000, read_up_to=2000)
    assert (read.complete, read.kept, read.size) == (False, False, 2001)


def test_a_chunked_body_the_server_cannot_end_is_unreadable_not_empty():
    request = _request(
        b"",
        CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked",
        **{"wsgi.input": io.BytesIO(b"{}")},
    )
    with pytest.raises(Unreadable, match="Content-Length"):
        read_spooled(request, keep_up_to=1000, read_up_to=2000)
