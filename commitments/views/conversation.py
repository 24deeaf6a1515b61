"""The conversation around a commitment on its page: the forms of its moves
(propose other terms, answer a proposal, ask for more time and answer it,
comment, withdraw, reassign), and the conversation and deadline history as
the page shows them. The views that take the forms are in views.commitment,
beside the handshake's."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django import forms

from audit.models import AuditAction, AuditEvent
from commitments.models import (
    COMMENT_MAX,
    DESCRIPTION_MAX,
    NOTE_MAX,
    Comment,
    Commitment,
    Proposal,
    ProposalKind,
    ProposalState,
)
from lib.forms import TextField

DATETIME_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]


def _deadline_field(**kwargs: Any) -> forms.DateTimeField:
    return forms.DateTimeField(
        input_formats=DATETIME_FORMATS,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        **kwargs,
    )


def _note_field(label: str = "Note (optional)", **kwargs: Any) -> TextField:
    return TextField(
        label=label,
        required=False,
        max_length=NOTE_MAX,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 2, "maxlength": NOTE_MAX}),
        **kwargs,
    )


class ProposeForm(forms.Form):
    """The assignee's other terms: a deadline (the usual case), other wording,
    or both, with a note. An empty field keeps that term as asked. Read in the
    viewer's time zone (UserTimezoneMiddleware)."""

    prefix = "propose"
    deadline = _deadline_field(
        label="Deadline you propose",
        required=False,
        help_text="Leave empty to keep the deadline asked.",
    )
    description = TextField(
        label="Wording you propose (optional)",
        required=False,
        max_length=DESCRIPTION_MAX,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Leave empty to keep the wording asked.",
    )
    note = _note_field()
    terms_version = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not self.errors and data.get("deadline") is None and not data.get("description"):
            raise forms.ValidationError(
                "Propose a deadline, other wording or both: an empty proposal changes nothing.",
                code="nothing",
            )
        return data


class ExtensionForm(forms.Form):
    """The assignee asks for a later deadline on an Active commitment."""

    prefix = "extension"
    deadline = _deadline_field(label="New deadline")
    note = _note_field()


class ProposalAnswerForm(forms.Form):
    """An answer to the open proposal the page showed: its id, and with a
    decline an optional note."""

    proposal_id = forms.UUIDField(widget=forms.HiddenInput)
    note = _note_field()


class CommentForm(forms.Form):
    prefix = "comment"
    body = TextField(
        label="Comment",
        max_length=COMMENT_MAX,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3, "maxlength": COMMENT_MAX}),
        help_text=f"Plain text, up to {COMMENT_MAX:,} characters. The other person is told.",
    )


class ReassignForm(forms.Form):
    prefix = "reassign"
    assignee_email = forms.EmailField(
        label="Hand it to (e-mail address)",
        max_length=254,
        widget=forms.EmailInput(attrs={"autocomplete": "off"}),
        help_text="Someone without an account gets an invitation by e-mail.",
    )
    note = _note_field()


class WithdrawForm(forms.Form):
    reason = _note_field(label="Reason (optional)")


# --- what the page shows ---------------------------------------------------------------

# Audit actions the conversation shows from their own rows (the proposal, the
# comment), not from the audit trail, which records them too.
SHOWN_FROM_ROWS = {
    AuditAction.PROPOSED,
    AuditAction.PROPOSAL_ACCEPTED,
    AuditAction.PROPOSAL_DECLINED,
    AuditAction.EXTENSION_REQUESTED,
    AuditAction.EXTENSION_GRANTED,
    AuditAction.EXTENSION_DECLINED,
    AuditAction.COMMENTED,
}

ANSWER_WORDS = {
    (ProposalKind.COUNTER, ProposalState.ACCEPTED): "Accepted the proposal",
    (ProposalKind.COUNTER, ProposalState.DECLINED): "Declined the proposal",
    (ProposalKind.EXTENSION, ProposalState.ACCEPTED): "Granted more time",
    (ProposalKind.EXTENSION, ProposalState.DECLINED): "Declined more time",
}


@dataclass
class Entry:
    """One line of the conversation: `kind` "event" (an audit row, as the
    timeline shows it), "proposal", "answer" or "comment"."""

    kind: str
    at: dt.datetime
    event: dict[str, Any] | None = None
    proposal: Proposal | None = None
    comment: Comment | None = None
    words: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def conversation(
    *, timeline: list[dict], proposals: list[Proposal], comments: list[Comment]
) -> list[Entry]:
    """The audit timeline (each entry as views.commitment._timeline makes it),
    the proposals with their answers and the comments, in time order."""
    entries = [
        Entry(kind="event", at=item["event"].occurred_at, event=item)
        for item in timeline
        if item["event"].action not in SHOWN_FROM_ROWS
    ]
    for proposal in proposals:
        asked = "Asked for more time" if proposal.kind == ProposalKind.EXTENSION else "Proposed"
        entries.append(
            Entry(kind="proposal", at=proposal.created_at, proposal=proposal, words=asked)
        )
        words = ANSWER_WORDS.get((ProposalKind(proposal.kind), ProposalState(proposal.state)))
        if words and proposal.answered_at:
            entries.append(
                Entry(kind="answer", at=proposal.answered_at, proposal=proposal, words=words)
            )
    entries += [Entry(kind="comment", at=c.created_at, comment=c) for c in comments]
    return sorted(entries, key=lambda e: e.at)  # stable: same-time rows keep their order


@dataclass(frozen=True)
class DeadlineChange:
    at: dt.datetime
    deadline: dt.datetime | None
    why: str  # "Asked", "Renegotiated", "Proposal accepted", "More time granted"


def _when(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value else None


def deadline_history(
    *, commitment: Commitment, events: list[AuditEvent], proposals: list[Proposal]
) -> list[DeadlineChange]:
    """The deadlines the commitment had, oldest first: the one asked, then
    each change both people saw (a renegotiation, an accepted proposal with
    a deadline, more time granted). From the rows the page reads anyway."""
    changes: list[tuple[dt.datetime, dt.datetime | None, dt.datetime | None, str]] = []
    for event in events:
        if event.action != AuditAction.RENEGOTIATED:
            continue
        new = (event.payload or {}).get("changes", {})
        old = (event.payload or {}).get("previous", {})
        if "deadline" in new:
            changes.append(
                (
                    event.occurred_at,
                    _when(old.get("deadline")),
                    _when(new["deadline"]),
                    "Renegotiated",
                )
            )
    for p in proposals:
        if p.state == ProposalState.ACCEPTED and p.deadline is not None and p.answered_at:
            why = "More time granted" if p.kind == ProposalKind.EXTENSION else "Proposal accepted"
            changes.append((p.answered_at, p.previous_deadline, p.deadline, why))
    changes.sort(key=lambda change: change[0])
    first = changes[0][1] if changes else commitment.deadline
    history = [DeadlineChange(at=commitment.created_at, deadline=first, why="Asked")]
    history += [DeadlineChange(at=at, deadline=new, why=why) for at, _, new, why in changes]
    return history
