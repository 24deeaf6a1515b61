"""Writes of the capture surface: saving chosen drafts as `Draft` commitments,
through the commitments service (POST /api/gather itself writes nothing)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from audit.services import Actor
from commitments.models import Commitment
from commitments.services import commitment_create_draft


@transaction.atomic
def capture_drafts_save(
    *, actor: Actor, drafts: Iterable[dict[str, Any]], raw_text: str
) -> list[Commitment]:
    """Save each draft (`assignee`, `description`, `deadline`) as a Draft
    commitment of the actor's, the pasted text kept in raw_text: all of them or,
    when one fails, none. Nobody is notified until a draft is sent."""
    return [
        commitment_create_draft(
            actor=actor,
            assignee=draft["assignee"],
            description=draft["description"],
            deadline=draft.get("deadline"),
            raw_text=raw_text,
        )
        for draft in drafts
    ]
