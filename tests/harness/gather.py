"""Helpers shared by the gather page and API tests: a signed-in browser with a
CSRF token, as the capture page's script calls POST /api/gather."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

from gather.keys import model_key_set

GATHER = "/api/gather"
OPENAI_KEY = "sk-test-openai-0123456789abcdefWXYZ"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdefWXYZ"
KEYS = {"openai": OPENAI_KEY, "anthropic": ANTHROPIC_KEY}


def give_key(user, provider: str = "openai", **extra: Any):
    return model_key_set(user=user, provider=provider, key=KEYS[provider], **extra)


def browser(user=None) -> Client:
    """A client that enforces CSRF as a browser's requests meet it, signed in as
    `user` (when given), holding the CSRF cookie the capture page sets."""
    client = Client(enforce_csrf_checks=True)
    if user is not None:
        client.force_login(user)
        response = client.get("/capture/")
        assert response.status_code == 200
    return client


def csrf_header(client: Client) -> dict[str, str]:
    return {"HTTP_X_CSRFTOKEN": client.cookies["csrftoken"].value}


def gather(client: Client, body: Any, *, csrf: bool = True, **headers: str):
    raw = body if isinstance(body, str | bytes) else json.dumps(body)
    if csrf and "csrftoken" in client.cookies:
        headers = {**csrf_header(client), **headers}
    headers.setdefault("content_type", "application/json")
    return client.post(GATHER, raw, **headers)
