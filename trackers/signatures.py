"""Is a delivery authentic? Each tracker signs its own way (its class's
`scheme`, `trackers.kinds`); every check runs on the raw body as it is read,
before it is parsed, and compares in constant time. And each names its
deliveries: the id that makes a redelivery a no-op (`delivery_id`).
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Scheme:
    """How one tracker signs: the header, and either the secret itself in it
    (`token`: decided from the headers, before a byte of the body) or a hex
    HMAC-SHA256 of the raw body after `prefix`."""

    header: str
    prefix: str = ""
    token: bool = False


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


class SignatureCheck:
    """One delivery's check, fed the raw body piece by piece as it arrives
    (`update`), so a large body is verified without being held. A check that
    the headers decide (GitLab's token, a missing header, a lost secret) needs
    no body: `needs_body` is False and `authentic()` answers at once."""

    def __init__(self, scheme: Scheme, *, secret: str, given: str) -> None:
        self._scheme, self._given = scheme, given
        self._mac: hmac.HMAC | None = None
        self._verdict: bool | None = None
        if not secret or not given:  # a lost secret (undecryptable) verifies nothing
            self._verdict = False
        elif scheme.token:
            self._verdict = _same(given, secret)
        else:
            self._mac = hmac.new(secret.encode(), digestmod=hashlib.sha256)

    @property
    def needs_body(self) -> bool:
        return self._verdict is None

    def update(self, piece: bytes) -> None:
        if self._mac is not None:
            self._mac.update(piece)

    def authentic(self) -> bool:
        if self._verdict is not None:
            return self._verdict
        assert self._mac is not None
        return _same(self._given.lower(), self._scheme.prefix + self._mac.hexdigest())


def signature_check(scheme: Scheme, *, secret: str, headers: Mapping[str, str]) -> SignatureCheck:
    return SignatureCheck(scheme, secret=secret, given=(headers.get(scheme.header) or "").strip())


def delivery_id(
    names: tuple[str, ...], *, headers: Mapping[str, str], body_sha256: str | None
) -> str:
    """The tracker's id of this delivery, from the first of its headers
    `names` that is set; without one, the body's digest (the same body twice
    is then the same delivery), or, for a body not read to its end, a fresh
    id."""
    for name in names:
        value = (headers.get(name) or "").strip()
        if value:
            return value[:200]
    return f"sha256:{body_sha256}" if body_sha256 else f"unread:{uuid.uuid4()}"
