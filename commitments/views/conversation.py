"""The conversation around a commitment as its page shows it: proposals,
answers and comments in time order among the timeline's events. The forms of
its moves are in commitments.forms, the views that take them in
views.commitment (beside the handshake's), and the deadlines' history is
read by commitments.selectors.deadline_history."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from audit.models import AuditAction
from commitments.models import Comment, Proposal, ProposalKind, ProposalState

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
