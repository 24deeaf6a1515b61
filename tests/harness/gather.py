"""Helpers shared by the gather page and API tests: a signed-in browser with a
CSRF token, as the capture page's script calls POST /api/gather."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from django.test import Client

from gather.schema import CONFIDENCE_LEVELS, DESCRIPTION_MAX, DRAFT_FIELDS
from gather.services import model_key_set

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
    return client.post(GATHER, raw, **headers)  # type: ignore[arg-type]  # content_type and HTTP_* extras, as Django's test client takes them


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def parse_deadline(value: str) -> dt.datetime:
    """An ISO-8601 date-time (a trailing Z allowed); ValueError otherwise."""
    return dt.datetime.fromisoformat(value.strip())


def _optional_string(draft: dict, name: str) -> str | None:
    value = draft.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string or null")
    return value.strip() or None


def validate_drafts(data: Any) -> list[dict]:
    """The contract's rules for drafts as JSON, the oracle the tests hold every
    answer of POST /api/gather to: the drafts of `{"drafts": [...]}`
    (camelCase JSON, as the API answers them) checked against the draft-list
    schema, as clean dicts holding exactly the draft fields (strings trimmed,
    empty optional strings null). Raises ValueError on anything else; a
    deadline must be an ISO-8601 date-time with an offset."""
    if not isinstance(data, dict) or not isinstance(data.get("drafts"), list):
        raise ValueError('expected an object {"drafts": [...]}')
    drafts: list[dict] = []
    for index, draft in enumerate(data["drafts"]):
        if not isinstance(draft, dict):
            raise ValueError(f"draft {index} is not an object")
        missing = [name for name in DRAFT_FIELDS if name not in draft]
        if missing:
            raise ValueError(f"draft {index} lacks {', '.join(missing)}")
        description = draft["description"]
        if not isinstance(description, str) or not description.strip():
            raise ValueError(f"draft {index}: description must be a non-empty string")
        description = description.strip()
        if len(description) > DESCRIPTION_MAX:
            raise ValueError(f"draft {index}: description longer than {DESCRIPTION_MAX} characters")
        if draft["confidence"] not in CONFIDENCE_LEVELS:
            raise ValueError(
                f"draft {index}: confidence must be one of {', '.join(CONFIDENCE_LEVELS)}"
            )
        if not isinstance(draft["sourceQuote"], str):
            raise ValueError(f"draft {index}: sourceQuote must be a string")
        clean = {
            "description": description,
            "assigneeName": _optional_string(draft, "assigneeName"),
            "assigneeEmail": _optional_string(draft, "assigneeEmail"),
            "deadline": _optional_string(draft, "deadline"),
            "deadlineText": _optional_string(draft, "deadlineText"),
            "confidence": draft["confidence"],
            "sourceQuote": draft["sourceQuote"].strip(),
        }
        if clean["assigneeEmail"] is not None and not _EMAIL.match(clean["assigneeEmail"]):
            raise ValueError(f"draft {index}: assigneeEmail is not an e-mail address")
        if clean["deadline"] is not None:
            try:
                deadline = parse_deadline(clean["deadline"])
            except ValueError:
                raise ValueError(f"draft {index}: deadline is not an ISO-8601 date-time") from None
            if deadline.utcoffset() is None:
                raise ValueError(f"draft {index}: deadline has no UTC offset")
        drafts.append(clean)
    return drafts
