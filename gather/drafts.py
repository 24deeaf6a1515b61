"""A draft commitment as capture handles it: one typed value, made once from
a provider's answer (`parse_drafts`, the only place a model's JSON is
checked) and turned into the contract's camelCase JSON only at the edge
(`gather.serializers.DraftSerializer`).

What `parse_drafts` accepts is the shape of the draft-list schema
(`gather.schema`); what it cannot trust yet (the deadline and the address)
it keeps as the model's text for the guards (`gather.guards`) to decide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gather.schema import CONFIDENCE_LEVELS, DESCRIPTION_MAX, DRAFT_FIELDS

Confidence = Literal["high", "medium", "low"]  # gather.schema.CONFIDENCE_LEVELS
CONFIDENCE_RANK = {level: rank for rank, level in enumerate(CONFIDENCE_LEVELS)}


@dataclass(frozen=True, slots=True)
class Draft:
    """One draft commitment. Strings are trimmed and empty optional ones are
    None. Out of `parse_drafts`, `deadline` and `assignee_email` are what the
    model said; out of `gather.guards.guard_drafts`, `deadline` is ISO-8601
    with the user's offset and `assignee_email` a collaborator's or None."""

    description: str
    assignee_name: str | None
    assignee_email: str | None
    deadline: str | None
    deadline_text: str | None
    confidence: Confidence
    source_quote: str


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens used, as the provider reported them."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )


def _optional(value: object, name: str, index: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"draft {index}: {name} must be a string or null")
    return value.strip() or None


def _untrusted(value: object) -> str | None:
    # A deadline or address the model botched is dropped, not fatal: the
    # guards decide what stays.
    return value.strip() or None if isinstance(value, str) else None


def parse_drafts(data: object) -> list[Draft]:
    """The drafts of a model's `{"drafts": [...]}`. Raises ValueError (saying
    what is wrong) when the answer does not have the draft-list schema's
    shape; a description longer than the schema allows is cut."""
    if not isinstance(data, dict) or not isinstance(data.get("drafts"), list):
        raise ValueError('expected an object {"drafts": [...]}')
    drafts: list[Draft] = []
    for index, raw in enumerate(data["drafts"]):
        if not isinstance(raw, dict):
            raise ValueError(f"draft {index} is not an object")
        trusted = [name for name in DRAFT_FIELDS if name not in ("deadline", "assigneeEmail")]
        missing = [name for name in trusted if name not in raw]
        if missing:
            raise ValueError(f"draft {index} lacks {', '.join(missing)}")
        description = raw["description"]
        if not isinstance(description, str) or not description.strip():
            raise ValueError(f"draft {index}: description must be a non-empty string")
        confidence = raw["confidence"]
        if confidence not in CONFIDENCE_LEVELS:
            raise ValueError(
                f"draft {index}: confidence must be one of {', '.join(CONFIDENCE_LEVELS)}"
            )
        quote = raw["sourceQuote"]
        if not isinstance(quote, str):
            raise ValueError(f"draft {index}: sourceQuote must be a string")
        drafts.append(
            Draft(
                description=description.strip()[:DESCRIPTION_MAX].strip(),
                assignee_name=_optional(raw["assigneeName"], "assigneeName", index),
                assignee_email=_untrusted(raw.get("assigneeEmail")),
                deadline=_untrusted(raw.get("deadline")),
                deadline_text=_optional(raw["deadlineText"], "deadlineText", index),
                confidence=confidence,
                source_quote=quote.strip(),
            )
        )
    return drafts
