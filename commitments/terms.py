"""A commitment's terms as the contract states them
(/work/shared/spec/http-interface.md, the inbox payload): a description
trimmed to 1..2000 characters, a deadline that is an absolute moment or none,
an externalSystem of 1..32 and an externalId of 1..128 characters, trimmed.

One check, used by the inbound API's serializer (`integrations.serializers`,
which parses the wire format and leaves the rules to this module) and by a
tracker connection's deliveries (`trackers.services`), which build the terms
straight from the issue. Problems are said in the words, and with the codes,
the API has always answered with, keyed by the contract's field names.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from commitments.models import DESCRIPTION_MAX, EXTERNAL_ID_MAX, EXTERNAL_SYSTEM_MAX
from lib.text import TEXT_PATTERN, is_blank, strip_blank

T = TypeVar("T")

BLANK = "This field may not be blank."
_TEXT = re.compile(TEXT_PATTERN)


@dataclass(frozen=True)
class Problem:
    message: str
    code: str


class TermsInvalid(ValueError):
    """Terms the contract refuses: `problems` by field name, in order."""

    def __init__(self, problems: dict[str, list[Problem]]) -> None:
        self.problems = problems
        super().__init__(self.said)

    @property
    def said(self) -> str:
        """`field: message` for each field, as the inbox's `details` read."""
        return "; ".join(
            f"{name}: {' '.join(p.message for p in found)}" for name, found in self.problems.items()
        )


@dataclass(frozen=True)
class TextRule:
    """A text term: trimmed of blank characters (`lib.text`), then
    `min_length..max_length` characters, no NUL, no lone surrogate."""

    name: str
    max_length: int
    min_length: int = 1

    def problems(self, value: str) -> list[Problem]:
        """What is wrong with `value`, trimmed already and not blank, in the
        order the API lists it."""
        found: list[Problem] = []
        if len(value) > self.max_length:
            found.append(
                Problem(
                    f"Ensure this field has no more than {self.max_length} characters.",
                    "max_length",
                )
            )
        if len(value) < self.min_length:
            found.append(
                Problem(
                    f"Ensure this field has at least {self.min_length} characters.", "min_length"
                )
            )
        if "\x00" in value:
            found.append(Problem("Null characters are not allowed.", "null_characters_not_allowed"))
        surrogate = next((ch for ch in value if 0xD800 <= ord(ch) <= 0xDFFF), None)
        if surrogate is not None:
            found.append(
                Problem(
                    f"Surrogate characters are not allowed: U+{ord(surrogate):X}.",
                    "surrogate_characters_not_allowed",
                )
            )
        if "\x00" not in value and not _TEXT.search(value):
            found.append(Problem(BLANK, "invalid"))
        return found

    def clean(self, value: str) -> str:
        """`value` trimmed; `TermsInvalid` when the rule refuses it."""
        trimmed = strip_blank(value)
        if is_blank(trimmed):
            raise TermsInvalid({self.name: [Problem(BLANK, "blank")]})
        found = self.problems(trimmed)
        if found:
            raise TermsInvalid({self.name: found})
        return trimmed


DESCRIPTION = TextRule("description", DESCRIPTION_MAX)
EXTERNAL_SYSTEM = TextRule("externalSystem", EXTERNAL_SYSTEM_MAX)
EXTERNAL_ID = TextRule("externalId", EXTERNAL_ID_MAX)

NAIVE = "Add a UTC offset or Z: a time without one is ambiguous."


def deadline_clean(value: dt.datetime | None) -> dt.datetime | None:
    """An absolute moment, in UTC, or None (no deadline); a time without an
    offset is refused (`TermsInvalid`): local to whom?"""
    if value is None:
        return None
    if value.tzinfo is None or value.utcoffset() is None:
        raise TermsInvalid({"deadline": [Problem(NAIVE, "naive")]})
    return value.astimezone(dt.UTC)


@dataclass(frozen=True)
class Terms:
    description: str
    deadline: dt.datetime | None
    external_system: str
    external_id: str


def terms_check(
    *,
    description: str,
    deadline: dt.datetime | None,
    external_system: str,
    external_id: str,
) -> Terms:
    """The terms, trimmed and checked all at once: `TermsInvalid` names every
    field the contract refuses."""
    problems: dict[str, list[Problem]] = {}

    def checked(clean: Callable[[T], T], value: T) -> T:
        try:
            return clean(value)
        except TermsInvalid as exc:
            problems.update(exc.problems)
            return value

    terms = Terms(
        description=checked(DESCRIPTION.clean, description),
        deadline=checked(deadline_clean, deadline),
        external_system=checked(EXTERNAL_SYSTEM.clean, external_system),
        external_id=checked(EXTERNAL_ID.clean, external_id),
    )
    if problems:
        raise TermsInvalid(problems)
    return terms
