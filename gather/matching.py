"""Names to e-mail addresses, only among the user's collaborators and only
where the match is unambiguous. An address is never taken from the model or
the text on trust: whatever is not a collaborator's address becomes null, so
capture never reveals or invents anyone else's address.

An address the text writes right next to the name ("Sam (sam@x.example)",
"Sam <sam@x.example>") says who is meant: when it is the address of a
collaborator the name can mean, it settles a name that fits several; when it
is nobody's we know, a name that only matched a collaborator's first name
gets no address (the text says this Sam is someone else)."""

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


def _full_match(name: str, people: list[Collaborator]) -> Collaborator | None:
    wanted = _fold(name.removeprefix("@"))
    full = [c for c in people if _names_of(c)[0] == wanted]
    return full[0] if len(full) == 1 else None


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


def _owner(email: str | None, people: list[Collaborator]) -> Collaborator | None:
    if not email or not email.strip():
        return None
    wanted = email.strip().casefold()
    return next((c for c in people if c.email.casefold() == wanted), None)


def match_assignee(
    *,
    name: str | None,
    email: str | None,
    collaborators: Iterable[Collaborator],
    written: Iterable[str] = (),
) -> str | None:
    """The e-mail address a draft may carry: a collaborator's, or None.

    `written` are the addresses the text writes next to the name
    (addresses_next_to). When there are any, they decide: the one collaborator
    among them whose name fits is used (of several, the one the model or the
    name picked); with none, only a full-name match keeps its address.
    Otherwise the model's address is kept only when it is a collaborator's and
    the name (if any) does not point at someone else or at several people,
    and else the name alone decides, only when unambiguous."""
    people = list(collaborators)
    by_name = match_name(name, people)
    model_owner = _owner(email, people)
    written = [address for address in written if address]
    if name and written:
        fitting = {
            owner
            for owner in (_owner(address, people) for address in written)
            if owner is not None and _fits(name, owner, people)
        }
        if len(fitting) == 1:
            return fitting.pop().email
        for pick in (model_owner, by_name):
            if pick is not None and pick in fitting:
                return pick.email
        if fitting:
            return None  # several collaborators written next to one name
        full = _full_match(name, people)
        return full.email if full else None
    if model_owner is not None and (
        not name or by_name == model_owner or _consistent(name, model_owner, people)
    ):
        return model_owner.email
    return by_name.email if by_name else None


def _fits(name: str, owner: Collaborator, people: list[Collaborator]) -> bool:
    """The name may mean `owner`: it is their full or first name or their
    address's local part, or it is no collaborator's name at all (a nickname,
    "Bob (robert@...)")."""
    wanted = _fold(name.removeprefix("@"))

    def names(person: Collaborator) -> set[str]:
        return {*_names_of(person), _fold(person.email.split("@", 1)[0])}

    if wanted in names(owner):
        return True
    return not any(wanted in names(c) for c in people)


# An e-mail address as people write one (no quoted local parts, no IP hosts).
_ADDRESS = r"[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)+"
_GAP = "[ \t\"'\u201c\u201d\u2018\u2019]*"  # spaces and quotes around a name


def addresses_next_to(name: str | None, text: str) -> list[str]:
    """The e-mail addresses `text` writes right next to `name`, in order:
    "Sam (sam@x.example)", "Sam <sam@x.example>", "Sam [mailto:sam@x.example]",
    "Sam, sam@x.example", "sam@x.example (Sam)". Case-insensitive; the name is
    matched as whole words. Not "Sam: sam@x.example", which in a chat log is
    Sam speaking."""
    if not name or not text:
        return []
    words = name.strip().removeprefix("@").split()
    if not words:
        return []
    spelled = r"(?<![\w@.])@?" + r"\s+".join(re.escape(w) for w in words) + r"(?![\w@]|\.\w)"
    after = (
        spelled
        + _GAP
        + r"(?:[,\-\u2013\u2014]"
        + _GAP
        + r")?[(<\[]?"
        + _GAP
        + r"(?:mailto:)?("
        + _ADDRESS
        + r")"
    )
    before = r"(?<![\w.])(" + _ADDRESS + r")" + _GAP + r"[>\]]?" + _GAP + r"[(\[]" + _GAP + spelled
    found = []
    for pattern in (after, before):
        for match in re.finditer(pattern, text, flags=re.IGNORECASE):
            found.append((match.start(1), match.group(1).rstrip(".")))
    return [address for _, address in sorted(found)]


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
