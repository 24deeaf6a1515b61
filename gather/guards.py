"""What the model says is not trusted: the guards every draft passes before
it leaves the service.

- the quote guard: a draft whose source quote does not occur in the text
  (whitespace, quotes, dashes and case normalised) is DROPPED, not kept as
  low confidence: a quote that is not there is an invented commitment;
- the address guard: an address only for a collaborator, only when
  unambiguous or settled by an address the quote writes next to the name
  (the rules are in gather.matching);
- deadlines are re-read in the user's zone and carry the user's offset.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import unicodedata
from dataclasses import replace

from gather.drafts import Draft
from gather.matching import addresses_next_to, match_assignee
from gather.selectors import Collaborator

logger = logging.getLogger(__name__)

_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "`": "'",
        "\u00b4": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u2026": "...",
    }
)
_WHITESPACE = re.compile(r"\s+")
_QUOTE_MARKERS = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.MULTILINE)  # e-mail "> " quoting


def normalise_for_quote(text: str) -> str:
    """Text as the quote guard compares it: NFKC, quotes and dashes made plain,
    e-mail quoting markers ("> ") removed, whitespace collapsed, case folded."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = _QUOTE_MARKERS.sub("", text)
    return _WHITESPACE.sub(" ", text).strip().casefold()


def quote_occurs(quote: str, normalised_text: str) -> bool:
    """Whether the quote occurs in the (normalised) text; quote marks or an
    ellipsis the model put around the quote do not count against it."""
    wanted = normalise_for_quote(quote).strip(" \"'.").strip()
    if not wanted:
        return False
    return wanted in normalised_text


def normalise_deadline(value: str | None, *, now: dt.datetime) -> str | None:
    """The model's deadline in the user's zone, with the user's offset: a
    deadline without an offset is read in the user's zone, a bare date means
    17:00 that day; an unreadable one becomes null (deadlineText keeps the
    phrase)."""
    if not value or not value.strip():
        return None
    value = value.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            day = dt.date.fromisoformat(value)
            moment = dt.datetime.combine(day, dt.time(17, 0))
        else:
            moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    zone = now.tzinfo
    if moment.utcoffset() is None:
        moment = moment.replace(tzinfo=zone)
        # A wall time that does not exist or is ambiguous (DST) is settled by
        # a round trip through UTC.
        moment = moment.astimezone(dt.UTC).astimezone(zone)
    else:
        moment = moment.astimezone(zone)
    return moment.isoformat(timespec="seconds")


def guard_drafts(
    drafts: list[Draft], *, text: str, now: dt.datetime, collaborators: list[Collaborator]
) -> list[Draft]:
    """One chunk's drafts made trustworthy: the quote guard, the address guard
    (an address the quote writes next to the name may settle who is meant),
    deadlines in the user's zone (`now` is aware, in that zone)."""
    normalised_text = normalise_for_quote(text)
    kept = []
    for draft in drafts:
        if not quote_occurs(draft.source_quote, normalised_text):
            logger.info("gather: dropped a draft whose quote is not in the text")
            continue
        name = draft.assignee_name
        kept.append(
            replace(
                draft,
                assignee_email=match_assignee(
                    name=name,
                    email=draft.assignee_email,
                    collaborators=collaborators,
                    written=addresses_next_to(name, draft.source_quote),
                ),
                deadline=normalise_deadline(draft.deadline, now=now),
            )
        )
    return kept
