"""The draft-list schema: one JSON schema for both providers (OpenAI structured
outputs in strict mode, Anthropic's forced tool call), and `validate_drafts`,
the contract's rules for drafts as JSON, which every answer of POST
/api/gather meets (the tests hold the answers to it). The service itself
checks a model's answer once, where it is parsed (`gather.drafts`), and
builds what it answers from typed drafts."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

CONFIDENCE_LEVELS = ("high", "medium", "low")
DESCRIPTION_MAX = 2000
DRAFT_FIELDS = (
    "description",
    "assigneeName",
    "assigneeEmail",
    "deadline",
    "deadlineText",
    "confidence",
    "sourceQuote",
)

_NULLABLE_STRING = {"type": ["string", "null"]}

# Strict mode (OpenAI) wants every property required and no extra properties;
# "optional" is spelled as a null type. No `format` or length keywords: not
# every model honours them; gather.drafts and gather.guards check what matters.
DRAFT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "description": {
            "type": "string",
            "description": (
                "The commitment as a short imperative task, e.g. 'Send the Q3 budget to finance'."
            ),
        },
        "assigneeName": {
            **_NULLABLE_STRING,
            "description": (
                "The name of the person who committed or was asked, as written in the "
                "text; null if nobody."
            ),
        },
        "assigneeEmail": {
            **_NULLABLE_STRING,
            "description": (
                "That person's e-mail address, only if they are in the collaborator "
                "list; else null."
            ),
        },
        "deadline": {
            **_NULLABLE_STRING,
            "description": (
                "The resolved deadline as ISO-8601 date-time with the user's UTC "
                "offset; null if none."
            ),
        },
        "deadlineText": {
            **_NULLABLE_STRING,
            "description": (
                "The deadline phrase exactly as written in the text (e.g. 'by Friday');"
                " null if none."
            ),
        },
        "confidence": {"type": "string", "enum": list(CONFIDENCE_LEVELS)},
        "sourceQuote": {
            "type": "string",
            "description": "The sentence of the text this commitment comes from, copied verbatim.",
        },
    },
    "required": list(DRAFT_FIELDS),
    "additionalProperties": False,
}

DRAFT_LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"drafts": {"type": "array", "items": DRAFT_SCHEMA}},
    "required": ["drafts"],
    "additionalProperties": False,
}

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
    """The drafts of `{"drafts": [...]}` (camelCase JSON, as the API answers
    them) checked against the draft-list schema, as clean dicts holding
    exactly the draft fields (strings trimmed, empty optional strings null).
    Raises ValueError on anything else; a deadline must be an ISO-8601
    date-time with an offset."""
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
