"""What one tracker delivery did, as typed values: one `Action` per person or
commitment considered (what was done, `Did`, and why), gathered into the
delivery's `Receipt`, which is both the answer to the tracker and its log row
(`TrackerEvent.actions` holds the actions' JSON, `Action.as_json`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import models

from trackers.models import Outcome


class Did(models.TextChoices):
    """What was done for one person or commitment (the hook's `did`)."""

    CREATED = "created"
    COMPLETED = "completed"
    # Closed without being done: withdrawn (issue 26). Delivery logs written
    # before it keep "recorded" (a close noted on the timeline, the status kept).
    WITHDRAWN = "withdrawn"
    RECORDED = "recorded"
    RENEGOTIATED = "renegotiated"  # the due date changed before the handshake
    NOTED = "noted"  # the due date changed after it: the accepted deadline stays
    MOVED = "moved"  # the issue has a new key
    KEPT = "kept"
    SKIPPED = "skipped"

    @property
    def changes(self) -> bool:
        """Whether it wrote to a commitment (or made one)."""
        return self not in (Did.KEPT, Did.SKIPPED)


@dataclass(frozen=True)
class Action:
    """One person (an assignee of the issue) or one commitment of the issue,
    and what the delivery did for it. Made once, when it is decided."""

    who: str  # the tracker's user as shown, or the commitment's externalId
    did: Did
    why: str = ""
    commitment_id: str = ""
    external_id: str = ""  # the commitment's externalId, when made or moved
    email: str = ""  # the assignee's address used
    tracker_user: str = ""  # the identity field's value, when not what is shown
    past_due: str = ""  # the due date (ISO), when it had passed at creation

    def as_json(self) -> dict[str, str]:
        """The wire form (the hook's `actions[]`, the log row's `actions`):
        the fields that are set."""
        pairs = {
            "who": self.who,
            "trackerUser": self.tracker_user,
            "email": self.email,
            "did": str(self.did),
            "why": self.why,
            "commitmentId": self.commitment_id,
            "externalId": self.external_id,
            "pastDue": self.past_due,
        }
        return {key: value for key, value in pairs.items() if value or key in ("who", "did")}

    def sentence(self) -> str:
        """The action in words, for the summary."""
        why = self.why.rstrip(".")
        if self.did == Did.CREATED:
            said = f"Created a commitment for {self.who} ({self.email})."
            if self.past_due:
                said += (
                    f" Its due date, {self.past_due}, had passed already: accepting counts it "
                    "as overdue at once."
                )
            return said
        if self.did == Did.COMPLETED:
            return f"Completed {self.who}."
        if self.did == Did.MOVED:
            return f"Moved {self.who} to {self.external_id}: {why}."
        return f"{self.did.capitalize()} {self.who}: {why}."


@dataclass(frozen=True)
class Receipt:
    """What a delivery did: the answer to the tracker and the log row's text."""

    outcome: Outcome
    summary: str
    event: str = ""
    external_id: str = ""
    actions: tuple[Action, ...] = field(default_factory=tuple)
    redelivery: bool = False

    @property
    def changed(self) -> bool:
        return self.outcome == Outcome.CHANGED and not self.redelivery

    def actions_json(self) -> list[dict[str, Any]]:
        return [action.as_json() for action in self.actions]
