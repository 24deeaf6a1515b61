"""Names to e-mail addresses, only among the user's collaborators and only
where the match is unambiguous. An address is never taken from the model or
the text on trust: whatever is not a collaborator's address becomes null, so
capture never reveals or invents anyone else's address."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from gather.selectors import Collaborator

_SPACE = re.compile(r"\s+")
_TITLES = {"mr", "mrs", "ms", "miss", "dr", "prof"}


def _fold(value: str) -> str:
    """Casefolded, accents removed, punctuation to spaces, whitespace collapsed."""
    decomposed = unicodedata.normalize("NFKD", value)
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    plain = re.sub(r"[^\w@.\-' ]", " ", plain.casefold()).replace(".", " ")
    words = [w for w in _SPACE.split(plain.strip()) if w and w not in _TITLES]
    return " ".join(words)


def _names_of(collaborator: Collaborator) -> tuple[str, str]:
    full = _fold(collaborator.name)
    return full, full.split(" ", 1)[0] if full else ""


def match_name(name: str | None, collaborators: Iterable[Collaborator]) -> Collaborator | None:
    """The one collaborator this name means: a full-name match, else a unique
    first-name match ("Sam" with two Sams: none). Matching is case- and
    accent-insensitive."""
    if not name or not name.strip():
        return None
    wanted = _fold(name.removeprefix("@"))
    if not wanted:
        return None
    people = list(collaborators)
    full = [c for c in people if _names_of(c)[0] == wanted]
    if len(full) == 1:
        return full[0]
    if full:
        return None  # two people with the same full name: ambiguous
    if " " not in wanted:
        first = [c for c in people if _names_of(c)[1] == wanted]
        if len(first) == 1:
            return first[0]
        # A handle like "sam.lee" or the local part of an address.
        local = [c for c in people if _fold(c.email.split("@", 1)[0]) == wanted]
        if len(local) == 1 and not first:
            return local[0]
    return None


def match_assignee(
    *, name: str | None, email: str | None, collaborators: Iterable[Collaborator]
) -> str | None:
    """The e-mail address a draft may carry: a collaborator's, or None.

    The model's address is kept only when it is a collaborator's and the name
    (if any) does not point at someone else or at several people; otherwise
    the name alone decides, and only when unambiguous."""
    people = list(collaborators)
    by_name = match_name(name, people)
    if email:
        wanted = email.strip().casefold()
        owner = next((c for c in people if c.email.casefold() == wanted), None)
        if owner is not None and (not name or by_name == owner or _consistent(name, owner, people)):
            return owner.email
    return by_name.email if by_name else None


def _consistent(name: str, owner: Collaborator, people: list[Collaborator]) -> bool:
    """The model named `owner` by an address that is theirs and a name that
    fits them: e.g. "Sam" for sam.lee@ when two Sams exist is NOT consistent
    enough (a guess), but a name that matches no collaborator's first or full
    name at all (a nickname, "Bob" for Robert) with their exact address is."""
    wanted = _fold(name)
    full, first = _names_of(owner)
    if wanted in (full, first):
        # Fits the owner; accept only if it fits nobody else.
        return not any(
            _fold(c.name) == wanted or _names_of(c)[1] == wanted for c in people if c != owner
        )
    return not any(wanted in _names_of(c) for c in people)
