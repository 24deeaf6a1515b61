"""What every page's navigation shows about commitments."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from commitments.selectors import accord_waiting_count


def accord_waiting(request: HttpRequest) -> dict:
    """`accord_waiting`: how many requests wait for the signed-in person's
    handshake and how many proposals wait for their answer, for the count
    beside "Accord". Lazy: one COUNT query, run only by a page that shows
    it."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"accord_waiting": SimpleLazyObject(lambda: accord_waiting_count(user=user))}
