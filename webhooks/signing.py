"""Secrets and signatures of outbound webhooks (for receivers: docs/webhooks.md,
"Headers" and "Secret rotation").

- The secret is `whsec_` + base64 of 32 random bytes (the Standard Webhooks
  form).
- `X-Service-Signature: sha256=<hex HMAC-SHA256>` of the raw body, keyed by
  the secret exactly as shown (UTF-8, prefix included, as GitHub does).
- `webhook-signature: v1,<base64 HMAC-SHA256>` of `{id}.{timestamp}.{body}`,
  keyed by the base64-decoded part after `whsec_` (Standard Webhooks).
- During a rotation both secrets sign: two `sha256=` values, comma-separated,
  and two space-separated `v1,` entries, the current secret's first.

The body signed is the body sent: callers pass the frozen bytes and send
exactly those.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets as random_secrets

from lib.outbound import USER_AGENT

SECRET_PREFIX = "whsec_"


def secret_generate() -> str:
    return SECRET_PREFIX + base64.b64encode(random_secrets.token_bytes(32)).decode("ascii")


def _standard_key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def service_signature(secret: str, body: bytes) -> str:
    """`sha256=<hex>` for one secret."""
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def standard_signature(secret: str, *, msg_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64>` for one secret (Standard Webhooks)."""
    content = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(_standard_key(secret), content, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signed_headers(
    *, secrets: list[str], delivery_id: str, event_name: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """Every header of one attempt: content type, user agent, the service's
    own headers and the Standard Webhooks ones, signed with each of
    `secrets` (the current one first)."""
    if not secrets:
        raise ValueError("No secret to sign with.")
    return {
        "Content-Type": "application/json",
        "User-Agent": f"{USER_AGENT} (webhooks)",
        "X-Service-Delivery": delivery_id,
        "X-Service-Event": event_name,
        "X-Service-Timestamp": str(timestamp),
        "X-Service-Signature": ",".join(service_signature(s, body) for s in secrets),
        "webhook-id": delivery_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            standard_signature(s, msg_id=delivery_id, timestamp=timestamp, body=body)
            for s in secrets
        ),
    }
