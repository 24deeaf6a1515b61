"""Reads of the conversation around commitments for the lists (the Accord,
the dashboard): the proposals that wait for a person's answer, and the open
proposal of each row of a list, in the list's own query. A fixed number of
queries whatever the number of commitments (tests/commitments/test_conversation_pages.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import OuterRef, QuerySet, Subquery

from commitments.models import Comment, Commitment, Proposal, ProposalKind, ProposalState, Status
from commitments.selectors import _allowed_now

if TYPE_CHECKING:
    from accounts.models import User


def answers_waiting_for(*, user: User) -> QuerySet[Proposal]:
    """The open proposals on what `user` asked of others: a counter-proposal
    on a request waiting for its handshake, or a request for more time on an
    Active commitment, each waiting for `user`'s answer. The oldest first
    (it has waited longest); each with its commitment and both people."""
    return (
        Proposal.objects.filter(
            state=ProposalState.OPEN,
            commitment__assigner=user,
            commitment__status__in=[Status.PENDING_HANDSHAKE, Status.ACTIVE],
        )
        .select_related("commitment", "commitment__assigner", "commitment__assignee", "proposed_by")
        .order_by("created_at", "pk")
    )


def with_open_proposal(rows: QuerySet[Commitment]) -> QuerySet[Commitment]:
    """`rows`, each carrying its open proposal's kind, deadline and time
    (`open_proposal_kind`, `open_proposal_deadline`, `open_proposal_at`; None
    without one), in the same query (one open proposal at most: a partial
    unique constraint)."""
    open_one = Proposal.objects.filter(commitment=OuterRef("pk"), state=ProposalState.OPEN)
    return rows.annotate(
        open_proposal_kind=Subquery(open_one.values("kind")[:1]),
        open_proposal_deadline=Subquery(open_one.values("deadline")[:1]),
        open_proposal_at=Subquery(open_one.values("created_at")[:1]),
    )


# The moves of the conversation, as the commitment page offers them.
CONVERSATION_MOVES = (
    "propose",
    "accept_proposal",
    "decline_proposal",
    "request_extension",
    "grant_extension",
    "decline_extension",
    "comment",
    "withdraw",
    "reassign",
)
# The moves that answer an open proposal of a kind, and those that open one.
_ANSWERS = {
    ProposalKind.COUNTER: {"accept_proposal", "decline_proposal"},
    ProposalKind.EXTENSION: {"grant_extension", "decline_extension"},
}
_OPENS = {"propose", "request_extension"}


def conversation_moves_for(
    *, user: User, commitment: Commitment, open_proposal: Proposal | None
) -> set[str]:
    """The moves of the conversation `user` may make on `commitment` now (the
    state machine's table, `commitments.machine.MOVES`), narrowed by its open
    proposal: an answer only to an open proposal of its kind, a new proposal
    only when none is open."""
    allowed = set(_allowed_now(CONVERSATION_MOVES, user=user, commitment=commitment))
    answers = _ANSWERS.get(ProposalKind(open_proposal.kind)) if open_proposal else set()
    for kind_answers in _ANSWERS.values():
        allowed -= kind_answers - (answers or set())
    if open_proposal is not None:
        allowed -= _OPENS
    return allowed


def commitment_proposals(*, commitment: Commitment) -> QuerySet[Proposal]:
    """Every proposal on `commitment`, oldest first, with who made and
    answered it: one query."""
    return commitment.proposals.select_related("proposed_by", "answered_by").order_by(
        "created_at", "pk"
    )


def commitment_comments(*, commitment: Commitment) -> QuerySet[Comment]:
    """The comments on `commitment`, oldest first, with their authors: one query."""
    return commitment.comments.select_related("author").order_by("created_at", "pk")
