"""The state machine (docs/api.md, "Statuses and moves") as data: where each move may start and
who may make it. The services enforce it in each move's compare-and-set (the
`UPDATE`'s conditions: `from_statuses`, and `who_may` as a filter) and judge
a refused one by it (`may_make`); pages read it to offer only the moves a
person can make. One table, so the two cannot drift.

Creation (by the assigner, or the assigner's own token for the inbox) starts
from no status: `may_create`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from audit.models import ActorKind
from audit.services import Actor
from commitments.models import Commitment, Status

ASSIGNER = "assigner"
ASSIGNEE = "assignee"


@dataclass(frozen=True)
class Move:
    words: str  # for messages: "Cannot <words> a commitment whose status is ..."
    from_statuses: frozenset[str]
    by: frozenset[str]  # roles of a signed-in user who may make it
    by_assigner_token: bool = False  # also the assigner's API token (sync)
    # Also the assigner's tracker connection (trackers.services), which
    # follows what the assigner does in the tracker: a due date they change
    # renegotiates, an issue they close without doing is withdrawn, one they
    # move is recorded.
    by_tracker: bool = False

    @property
    def who(self) -> str:
        people = [f"the {role}" for role in sorted(self.by)]
        if self.by_assigner_token:
            people.append("the assigner's token")
        elif self.by_tracker:
            people.append("the assigner's tracker connection")
        return "only " + " or ".join(people)


PENDING = frozenset({Status.PENDING_HANDSHAKE})
ACTIVE = frozenset({Status.ACTIVE})
# Every status a commitment can have once it was sent (all but Draft).
SENT = frozenset(
    {
        Status.PENDING_HANDSHAKE,
        Status.ACTIVE,
        Status.COMPLETED,
        Status.REFUSED,
        Status.WITHDRAWN,
    }
)

MOVES: dict[str, Move] = {
    "send": Move("send for handshake", frozenset({Status.DRAFT}), frozenset({ASSIGNER})),
    "edit_draft": Move("edit the draft of", frozenset({Status.DRAFT}), frozenset({ASSIGNER})),
    "accept": Move("accept", frozenset({Status.PENDING_HANDSHAKE}), frozenset({ASSIGNEE})),
    "decline": Move("decline", frozenset({Status.PENDING_HANDSHAKE}), frozenset({ASSIGNEE})),
    "complete": Move(
        "complete",
        frozenset({Status.ACTIVE}),
        frozenset({ASSIGNER, ASSIGNEE}),
        by_assigner_token=True,
    ),
    "renegotiate": Move(
        "renegotiate",
        frozenset({Status.PENDING_HANDSHAKE, Status.REFUSED}),
        frozenset({ASSIGNER}),
        by_tracker=True,
    ),
    # The conversation (issue 26). A counter-proposal and its answers leave
    # the status Pending_Handshake, except accepting one, which activates
    # (the assignee offered exactly those terms); an extension and its
    # answers leave it Active.
    "propose": Move("propose other terms for", PENDING, frozenset({ASSIGNEE})),
    "accept_proposal": Move("accept a proposal on", PENDING, frozenset({ASSIGNER})),
    "decline_proposal": Move("decline a proposal on", PENDING, frozenset({ASSIGNER})),
    "request_extension": Move("ask for more time on", ACTIVE, frozenset({ASSIGNEE})),
    "grant_extension": Move("grant more time on", ACTIVE, frozenset({ASSIGNER})),
    "decline_extension": Move("decline more time on", ACTIVE, frozenset({ASSIGNER})),
    "comment": Move("comment on", SENT, frozenset({ASSIGNER, ASSIGNEE})),
    # The assigner no longer needs it. Also the assigner's tracker
    # connection: an issue closed without being done (not planned, canceled,
    # won't do) is withdrawn (trackers.services._not_done).
    "withdraw": Move(
        "withdraw",
        frozenset({Status.PENDING_HANDSHAKE, Status.ACTIVE, Status.REFUSED}),
        frozenset({ASSIGNER}),
        by_tracker=True,
    ),
    # Handed to someone else, who is asked for a fresh handshake.
    "reassign": Move(
        "reassign",
        frozenset({Status.PENDING_HANDSHAKE, Status.ACTIVE, Status.REFUSED}),
        frozenset({ASSIGNER}),
    ),
    # Records, not moves: the status stays (docs/trackers.md). (Before issue
    # 26 an issue closed without being done was recorded, `closed_not_done`;
    # it is withdrawn now.)
    # The tracker's due date changed after the handshake completed: the
    # accepted deadline stays (terms change only before it), the change is
    # recorded for both to see.
    "record_source_deadline": Move(
        "record a changed due date on",
        frozenset({Status.ACTIVE}),
        frozenset({ASSIGNER}),
        by_tracker=True,
    ),
    # The issue moved (another project or team) and has a new key.
    "change_external_ref": Move(
        "change the external reference of",
        SENT,
        frozenset({ASSIGNER}),
        by_tracker=True,
    ),
}


# Creation starts from no status: the assigner, or the assigner's own token.
CREATE = Move("create", frozenset(), frozenset({ASSIGNER}), by_assigner_token=True)


def may_make(move: Move, *, actor: Actor, commitment: Commitment) -> bool:
    """Whether `actor` is someone the table lets make `move` on `commitment`."""
    return _may(move, actor, commitment.assigner_id, commitment.assignee_id)


def may_create(*, actor: Actor, assigner_id) -> bool:
    return _may(CREATE, actor, assigner_id, None)


def who_may(move: Move, *, actor: Actor) -> Q | None:
    """The commitments `actor` may make `move` on as far as who they are
    (`may_make`, as a filter for the move's `UPDATE`), or None when they may
    make it on none."""
    if actor.user is None:
        return None
    pk = actor.user.pk
    if actor.kind == ActorKind.USER:
        roles = [Q(assigner_id=pk)] if ASSIGNER in move.by else []
        if ASSIGNEE in move.by:
            roles.append(Q(assignee_id=pk))
        if not roles:
            return None
        return roles[0] if len(roles) == 1 else roles[0] | roles[1]
    if actor.kind == ActorKind.TRACKER and actor.token_id is not None:
        return Q(assigner_id=pk) if move.by_assigner_token or move.by_tracker else None
    if actor.kind == ActorKind.API_TOKEN and actor.token_id is not None:
        return Q(assigner_id=pk) if move.by_assigner_token else None
    return None


def _may(move: Move, actor: Actor, assigner_id, assignee_id) -> bool:
    if actor.user is None:
        return False
    if actor.kind == ActorKind.USER:
        roles = {ASSIGNER} if actor.user.pk == assigner_id else set()
        if actor.user.pk == assignee_id:
            roles.add(ASSIGNEE)
        return bool(roles & move.by)
    # A tracker connection acts as its owner's token does (create, complete),
    # and follows the owner's own changes in the tracker (`by_tracker`).
    if actor.kind == ActorKind.TRACKER and actor.token_id is not None:
        return (move.by_assigner_token or move.by_tracker) and actor.user.pk == assigner_id
    if actor.kind == ActorKind.API_TOKEN and actor.token_id is not None:
        return move.by_assigner_token and actor.user.pk == assigner_id
    return False
