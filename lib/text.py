"""Short forms of text for logs, pages and the admin."""

from __future__ import annotations

EXCERPT_LENGTH = 300


def excerpt(text: str | None, limit: int = EXCERPT_LENGTH) -> str:
    """`text` on one line (runs of white space folded), cut to `limit`
    characters with an ellipsis: for error messages and response excerpts."""
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
