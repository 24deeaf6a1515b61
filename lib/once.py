"""One-time form keys: a form that is sent again (reload, back button, a
double click) acts once.

Each rendered form carries a fresh key kept in the session under its page's
scope; the POST uses it up, and a second POST with the same key finds it
gone. A few keys are kept per scope, so several open tabs each work once.
"""

from __future__ import annotations

import secrets

from django.http import HttpRequest

MAX_KEYS = 10  # open tabs at once per scope; older keys are dropped


def _session_key(scope: str) -> str:
    return f"{scope}.form_keys"


def form_key_new(request: HttpRequest, *, scope: str) -> str:
    key = secrets.token_urlsafe(16)
    name = _session_key(scope)
    request.session[name] = [*request.session.get(name, []), key][-MAX_KEYS:]
    return key


def form_key_use(request: HttpRequest, key: str, *, scope: str) -> bool:
    """True once per key: it is removed as it is used."""
    name = _session_key(scope)
    keys = list(request.session.get(name, []))
    if key not in keys:
        return False
    keys.remove(key)
    request.session[name] = keys
    return True
