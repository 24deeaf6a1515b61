"""The draft-list schema: one JSON schema for both providers (OpenAI structured
outputs in strict mode, Anthropic's forced tool call). The service checks a
model's answer once, where it is parsed (`gather.drafts`), and builds what it
answers from typed drafts; the tests hold every answer of POST /api/gather to
the contract's rules (`tests.harness.gather.validate_drafts`)."""

from __future__ import annotations

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
