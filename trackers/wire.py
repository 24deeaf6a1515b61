"""A delivery as it comes off the wire: its body read (streamed, verified as it
arrives, within the trackers' size) and decoded (JSON, or GitHub's form
encoding). No database.

The size: GitHub caps a delivery at 25 MB, and GitLab, Linear and Jira send
less; a body of up to `settings.TRACKER_MAX_BODY_BYTES` (25 MiB) is read,
held in memory up to 1 MiB and in a temporary file past that. A larger body
cannot be used, but an authentic one must still leave a row saying why: it is
read on to its end, kept nowhere, only to check its HMAC, up to
`VERIFY_UP_TO` times the limit. Past that nothing can tell it authentic (no
tracker sends one), and it is refused unread (413). GitLab's token is in a
header, so there the body is never needed to decide.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from django.conf import settings
from django.http import HttpRequest

from lib.request_body import SpooledBody, read_spooled
from trackers.signatures import SignatureCheck

VERIFY_UP_TO = 4  # times the limit: how far an over-limit body is read to check its HMAC
FORM = "application/x-www-form-urlencoded"


def max_body_bytes() -> int:
    return settings.TRACKER_MAX_BODY_BYTES


def read_body(request: HttpRequest, check: SignatureCheck) -> SpooledBody:
    """The body, fed to `check` as it is read. Kept when it is within the
    limit; otherwise `size` says how large it was (or declared itself).
    Raises `lib.request_body.Unreadable`."""
    limit = max_body_bytes()
    return read_spooled(
        request,
        keep_up_to=limit,
        read_up_to=limit * VERIFY_UP_TO if check.needs_body else limit,
        consume=check.update,
    )


def too_large_summary(body: SpooledBody) -> str:
    limit = max_body_bytes()
    size = f"{body.size:,} bytes" if body.complete else f"more than {limit:,} bytes"
    return (
        f"Too large: the body is {size}, over the limit of {limit:,} bytes "
        f"({limit / 1024 / 1024:g} MiB); it was not read, and nothing was done."
    )


@dataclass(frozen=True)
class Decoded:
    data: Any  # the parsed JSON, or None
    why: str = ""  # why it is None


def decode(body: bytes, content_type: str) -> Decoded:
    """The delivery's JSON. GitHub's default content type,
    `application/x-www-form-urlencoded`, sends it as the form field `payload`;
    every tracker's other deliveries are the JSON itself."""
    if content_type.split(";")[0].strip().lower() == FORM:
        try:
            fields = parse_qs(
                body.decode("ascii"), keep_blank_values=True, max_num_fields=20, errors="strict"
            )
        except (UnicodeDecodeError, ValueError):
            return Decoded(None, "the body is not a URL-encoded form")
        payload = fields.get("payload") or []
        if len(payload) != 1:
            return Decoded(None, "the form has no single payload field")
        text: str | bytes = payload[0]
    else:
        text = body
    try:
        return Decoded(json.loads(text))
    except (ValueError, RecursionError):
        return Decoded(None, "the body is not JSON")
