"""Is a delivery authentic? Each tracker signs its own way (`SCHEMES`); every
check runs on the raw body as it is read, before it is parsed, and compares
in constant time.

- GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`.
- GitLab: `X-Gitlab-Token` equal to the secret.
- Linear: `Linear-Signature: <hex HMAC-SHA256 of the body>` (its
  `webhookTimestamp`, inside the signed body, is checked once the body is
  parsed: `linear_timestamp_fresh`).
- Jira: `X-Hub-Signature: sha256=<hex HMAC-SHA256 of the body>`.

And each names its deliveries: the id that makes a redelivery a no-op.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

LINEAR_TOLERANCE = dt.timedelta(minutes=1)


@dataclass(frozen=True)
class Scheme:
    """How one tracker signs: the header, and either the secret itself in it
    (`token`: decided from the headers, before a byte of the body) or a hex
    HMAC-SHA256 of the raw body after `prefix`."""

    header: str
    prefix: str = ""
    token: bool = False


SCHEMES = {
    "github": Scheme("X-Hub-Signature-256", prefix="sha256="),
    "gitlab": Scheme("X-Gitlab-Token", token=True),
    "linear": Scheme("Linear-Signature"),
    "jira": Scheme("X-Hub-Signature", prefix="sha256="),
}
SIGNATURE_HEADERS = {kind: scheme.header for kind, scheme in SCHEMES.items()}

DELIVERY_HEADERS = {
    "github": ("X-GitHub-Delivery",),
    "gitlab": ("Idempotency-Key", "X-Gitlab-Event-UUID"),
    "linear": ("Linear-Delivery",),
    "jira": ("X-Atlassian-Webhook-Identifier",),
}


def hmac_hex(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


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


def signature_check(kind: str, *, secret: str, headers: Mapping[str, str]) -> SignatureCheck:
    scheme = SCHEMES[kind]
    return SignatureCheck(scheme, secret=secret, given=(headers.get(scheme.header) or "").strip())


def authentic(kind: str, *, secret: str, headers: Mapping[str, str], body: bytes) -> bool:
    """Whether the delivery carries the signature its tracker makes with `secret`."""
    check = signature_check(kind, secret=secret, headers=headers)
    check.update(body)
    return check.authentic()


def linear_timestamp_fresh(timestamp_ms: object, *, now: dt.datetime) -> bool:
    """Linear's `webhookTimestamp` (milliseconds since the epoch) is within a
    minute of `now`: a captured delivery cannot be replayed later."""
    if isinstance(timestamp_ms, bool) or not isinstance(timestamp_ms, int | float):
        return False
    try:
        sent = dt.datetime.fromtimestamp(timestamp_ms / 1000, tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return False
    return abs(now - sent) <= LINEAR_TOLERANCE


def delivery_id(kind: str, *, headers: Mapping[str, str], body_sha256: str | None) -> str:
    """The tracker's id of this delivery; without one, the body's digest (the
    same body twice is then the same delivery), or, for a body not read to
    its end, a fresh id."""
    for name in DELIVERY_HEADERS[kind]:
        value = (headers.get(name) or "").strip()
        if value:
            return value[:200]
    return f"sha256:{body_sha256}" if body_sha256 else f"unread:{uuid.uuid4()}"
