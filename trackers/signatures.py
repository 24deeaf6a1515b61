"""Is a delivery authentic? Each tracker signs its own way; every check runs on
the raw body, before it is parsed, and compares in constant time.

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
from collections.abc import Mapping

LINEAR_TOLERANCE = dt.timedelta(minutes=1)

SIGNATURE_HEADERS = {
    "github": "X-Hub-Signature-256",
    "gitlab": "X-Gitlab-Token",
    "linear": "Linear-Signature",
    "jira": "X-Hub-Signature",
}

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


def authentic(kind: str, *, secret: str, headers: Mapping[str, str], body: bytes) -> bool:
    """Whether the delivery carries the signature its tracker makes with `secret`."""
    if not secret:  # a lost secret (undecryptable) verifies nothing
        return False
    given = (headers.get(SIGNATURE_HEADERS[kind]) or "").strip()
    if not given:
        return False
    if kind == "gitlab":
        return _same(given, secret)
    digest = hmac_hex(secret, body)
    if kind == "linear":
        return _same(given.lower(), digest)
    return _same(given.lower(), "sha256=" + digest)  # GitHub, Jira


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


def delivery_id(kind: str, *, headers: Mapping[str, str], body: bytes) -> str:
    """The tracker's id of this delivery; without one, a digest of the body
    (the same body twice is then the same delivery)."""
    for name in DELIVERY_HEADERS[kind]:
        value = (headers.get(name) or "").strip()
        if value:
            return value[:200]
    return "sha256:" + hashlib.sha256(body).hexdigest()
