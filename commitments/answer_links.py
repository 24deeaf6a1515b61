"""Answer links: the signed links a handshake request carries (Accept,
Decline, Propose another date), made and read here and nowhere else.

A link names one commitment, the one person it was made for, the version of
the terms that person was shown, and the answer its button offered. It is
signed with `django.core.signing` (SECRET_KEY, salt ANSWER_LINK_SALT) and
expires after settings.ANSWER_LINK_MAX_AGE seconds. It is not a credential:
opening it never acts (the page acts on a POST by the signed-in person it was
made for), so a link that leaks lets nobody answer (docs/security.md, "Answer
links").
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core import signing
from django.urls import reverse

ANSWER_LINK_SALT = "commitments.answer"
# The answers a link can offer, as the page's choice names them.
ANSWERS = ("accept", "decline", "propose")


class AnswerLinkInvalid(Exception):
    """Not a link this service made for this commitment: malformed, altered,
    signed with another key, or naming another commitment."""


class AnswerLinkExpired(AnswerLinkInvalid):
    """A link this service made, older than settings.ANSWER_LINK_MAX_AGE."""


@dataclass(frozen=True)
class AnswerLink:
    """What a verified link says."""

    commitment_id: uuid.UUID
    user_id: uuid.UUID
    terms_version: int
    answer: str


def answer_token_make(
    *, commitment_id: uuid.UUID, user_id: uuid.UUID, terms_version: int, answer: str
) -> str:
    """The signed, timestamped token of one answer link."""
    if answer not in ANSWERS:
        raise ValueError(f"No such answer: {answer!r}")
    payload = {"c": commitment_id.hex, "u": user_id.hex, "v": terms_version, "a": answer}
    return signing.dumps(payload, salt=ANSWER_LINK_SALT)


def answer_path(
    *, commitment_id: uuid.UUID, user_id: uuid.UUID, terms_version: int, answer: str
) -> str:
    """The site-relative address of an answer link (`commitment_answer`)."""
    token = answer_token_make(
        commitment_id=commitment_id, user_id=user_id, terms_version=terms_version, answer=answer
    )
    return reverse("commitment_answer", args=[commitment_id, token])


def answer_token_read(token: str, *, commitment_id: uuid.UUID) -> AnswerLink:
    """The link `token` is, if this service signed it for `commitment_id` (the
    commitment in the link's own address) within ANSWER_LINK_MAX_AGE seconds.
    Raises AnswerLinkExpired or AnswerLinkInvalid; reads no database."""
    try:
        payload: Any = signing.loads(
            token, salt=ANSWER_LINK_SALT, max_age=settings.ANSWER_LINK_MAX_AGE
        )
    except signing.SignatureExpired as exc:
        raise AnswerLinkExpired() from exc
    except (signing.BadSignature, ValueError) as exc:  # ValueError: a payload that is no JSON
        raise AnswerLinkInvalid() from exc
    try:
        link = AnswerLink(
            commitment_id=uuid.UUID(hex=payload["c"]),
            user_id=uuid.UUID(hex=payload["u"]),
            terms_version=int(payload["v"]),
            answer=str(payload["a"]),
        )
    except (TypeError, KeyError, ValueError) as exc:  # signed, but not by this module's shape
        raise AnswerLinkInvalid() from exc
    if link.commitment_id != commitment_id or link.answer not in ANSWERS:
        raise AnswerLinkInvalid()
    return link
