"""Every move is a compare-and-set (commitments.services): two callers making
it at once on PostgreSQL, released together by a barrier on their own
connections. Of an exclusive move exactly one wins and the other gets the
answer the contract gives a caller who came second (an invalid transition,
changed terms, a proposal answered already, ...), with exactly one audit row
and one outbox row written; of a move both may make (a comment, a record of
the source) both are kept, none lost. And the races between different moves
that a lock used to settle: whatever wins, no proposal is left open on terms
or a status that are gone."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import Actor
from commitments import services
from commitments.errors import (
    CommitmentError,
    CommitmentNotFound,
    InvalidTransition,
    NotPermitted,
    TermsChanged,
)
from commitments.models import Comment, Commitment, OutboxEvent, Proposal, Status
from tests.harness.concurrency import race

pytestmark = pytest.mark.postgres

LATER = timezone.now() + dt.timedelta(days=30)


def _answer(call: Callable[[], Any]) -> str:
    """ "won", or the name of the error the caller was given."""
    try:
        call()
    except CommitmentError as exc:
        return type(exc).__name__
    return "won"


class World:
    def __init__(self, assigner, assignee, make_user) -> None:
        self.assigner, self.assignee = assigner, assignee
        self.lead, self.knight = Actor.for_user(assigner), Actor.for_user(assignee)
        self.tracker = Actor.for_tracker(user=assigner, connection_id=uuid.uuid4(), label="T")
        self.make_user = make_user

    def pending(self, **extra: Any) -> Commitment:
        return services.commitment_create_pending(
            actor=self.lead,
            assigner=self.assigner,
            assignee=self.assignee,
            description="Race me",
            deadline=extra.pop("deadline", LATER),
            **extra,
        )

    def active(self, **extra: Any) -> Commitment:
        c = self.pending(**extra)
        services.commitment_accept(actor=self.knight, commitment_id=c.pk, terms_version=1)
        return c

    def draft(self) -> Commitment:
        return services.commitment_create_draft(
            actor=self.lead, assignee=self.assignee, description="Race me", deadline=LATER
        )

    def counter(self) -> tuple[Commitment, Proposal]:
        c = self.pending()
        p = services.commitment_propose(
            actor=self.knight, commitment_id=c.pk, terms_version=1, description="Other"
        )
        return c, p

    def extension(self) -> tuple[Commitment, Proposal]:
        c = self.active()
        p = services.commitment_extension_request(
            actor=self.knight, commitment_id=c.pk, deadline=LATER + dt.timedelta(days=7)
        )
        return c, p


@pytest.fixture
def world(assigner, assignee, make_user) -> World:
    return World(assigner, assignee, make_user)


def _same_move_twice(w: World, move: str) -> tuple[Commitment, Callable[[], Any], str]:
    """The commitment, the call both callers make, and the loser's answer."""
    s = services
    if move == "send":
        c = w.draft()
        return (
            c,
            lambda: s.commitment_send_for_handshake(actor=w.lead, commitment_id=c.pk),
            ("InvalidTransition"),
        )
    if move == "edit_draft":
        c = w.draft()
        counter = iter(range(100))
        return (
            c,
            lambda: s.commitment_update_draft(
                actor=w.lead,
                commitment_id=c.pk,
                description=f"Edited {next(counter)}",
                terms_version=1,
            ),
            "TermsChanged",
        )
    if move == "accept":
        c = w.pending()
        return (
            c,
            lambda: s.commitment_accept(actor=w.knight, commitment_id=c.pk, terms_version=1),
            "InvalidTransition",
        )
    if move == "decline":
        c = w.pending()
        return (
            c,
            lambda: s.commitment_decline(actor=w.knight, commitment_id=c.pk, terms_version=1),
            "InvalidTransition",
        )
    if move == "complete":
        c = w.active()
        return (
            c,
            lambda: s.commitment_complete(actor=w.knight, commitment_id=c.pk),
            ("InvalidTransition"),
        )
    if move == "renegotiate":
        c = w.pending()
        counter = iter(range(100))
        return (
            c,
            lambda: s.commitment_renegotiate(
                actor=w.lead,
                commitment_id=c.pk,
                description=f"New {next(counter)}",
                terms_version=1,
            ),
            "TermsChanged",
        )
    if move == "propose":
        c = w.pending()
        return (
            c,
            lambda: s.commitment_propose(
                actor=w.knight, commitment_id=c.pk, terms_version=1, description="Other"
            ),
            "ProposalAlreadyOpen",
        )
    if move in ("accept_proposal", "decline_proposal"):
        c, p = w.counter()
        call: Callable[..., Any] = (
            s.commitment_proposal_accept
            if move == "accept_proposal"
            else s.commitment_proposal_decline
        )
        return (
            c,
            lambda: call(actor=w.lead, commitment_id=c.pk, proposal_id=p.pk),
            ("ProposalNotOpen"),
        )
    if move == "request_extension":
        c = w.active()
        return (
            c,
            lambda: s.commitment_extension_request(
                actor=w.knight, commitment_id=c.pk, deadline=LATER + dt.timedelta(days=7)
            ),
            "ProposalAlreadyOpen",
        )
    if move in ("grant_extension", "decline_extension"):
        c, p = w.extension()
        answer: Callable[..., Any] = (
            s.commitment_extension_grant
            if move == "grant_extension"
            else s.commitment_extension_decline
        )
        return (
            c,
            lambda: answer(actor=w.lead, commitment_id=c.pk, proposal_id=p.pk),
            ("ProposalNotOpen"),
        )
    if move == "withdraw":
        c = w.active()
        return (
            c,
            lambda: s.commitment_withdraw(actor=w.lead, commitment_id=c.pk),
            ("InvalidTransition"),
        )
    if move == "reassign":
        c = w.active()
        w.make_user("squire@example.com")
        return (
            c,
            lambda: s.commitment_reassign(
                actor=w.lead, commitment_id=c.pk, assignee_email="squire@example.com"
            ),
            "ReassignInvalid",
        )
    raise AssertionError(move)


EXCLUSIVE = [
    "send",
    "edit_draft",
    "accept",
    "decline",
    "complete",
    "renegotiate",
    "propose",
    "accept_proposal",
    "decline_proposal",
    "request_extension",
    "grant_extension",
    "decline_extension",
    "withdraw",
    "reassign",
]
# Records and comments: both callers' are kept.
SHARED = ["comment", "record_source_deadline", "change_external_ref"]


def test_every_move_of_the_table_is_raced_here():
    from commitments.machine import MOVES

    assert set(EXCLUSIVE) | set(SHARED) == set(MOVES)


def _rows(c: Commitment) -> tuple[int, int]:
    audit = AuditEvent.objects.for_object(c).count()
    return audit, OutboxEvent.objects.filter(commitment=c).count()


@pytest.mark.parametrize("move", EXCLUSIVE)
def test_two_callers_making_one_move_at_once_one_wins_the_other_is_told(world, move):
    c, call, told = _same_move_twice(world, move)
    audit, outbox = _rows(c)

    outcomes = race([lambda: _answer(call), lambda: _answer(call)])

    assert sorted(outcomes) == sorted(["won", told])
    new_audit, new_outbox = _rows(c)
    assert new_audit == audit + 1
    assert new_outbox == outbox + (0 if move == "edit_draft" else 1)
    c.refresh_from_db()
    assert Proposal.objects.filter(commitment=c, state="open").count() == (
        1 if move in ("propose", "request_extension") else 0
    )


def test_two_comments_at_once_are_both_kept(world):
    c = world.active()
    outcomes = race(
        [
            lambda: _answer(
                lambda: services.commitment_comment(
                    actor=world.lead, commitment_id=c.pk, body="From the lead"
                )
            ),
            lambda: _answer(
                lambda: services.commitment_comment(
                    actor=world.knight, commitment_id=c.pk, body="From the knight"
                )
            ),
        ]
    )
    assert outcomes == ["won", "won"]
    assert Comment.objects.filter(commitment=c).count() == 2
    assert AuditEvent.objects.for_object(c).filter(action="commented").count() == 2
    assert OutboxEvent.objects.filter(commitment=c, kind="commented").count() == 2


def test_two_records_of_the_source_at_once_are_both_kept(world):
    c = world.active(external_system="jira", external_id="R-1")

    def record(n: int):
        return lambda: _answer(
            lambda: services.commitment_record_source_deadline(
                actor=world.tracker,
                commitment_id=c.pk,
                deadline=LATER + dt.timedelta(days=n),
                words=f"in {n} days",
            )
        )

    def rename(key: str):
        return lambda: _answer(
            lambda: services.commitment_external_ref_change(
                actor=world.tracker, commitment_id=c.pk, external_id=key
            )
        )

    assert race([record(1), record(2)]) == ["won", "won"]
    assert race([rename("R-2"), rename("R-3")]) == ["won", "won"]
    actions = list(AuditEvent.objects.for_object(c).values_list("action", flat=True))
    assert actions.count("source_deadline_changed") == 2
    assert actions.count("external_ref_changed") == 2
    c.refresh_from_db()
    last = (
        AuditEvent.objects.for_object(c).filter(action="external_ref_changed").latest("occurred_at")
    )
    assert c.external_id == last.payload["externalId"]


def test_a_token_and_a_person_completing_at_once_one_wins(world):
    """The sync (no read before its UPDATE) against the page (reads first)."""
    c = world.active(external_system="jira", external_id="S-1")
    token = Actor.for_token(
        user=world.assigner, token_id=uuid.uuid4(), token_prefix="p", token_name="n"
    )

    def sync() -> str:
        result = services.commitment_complete(
            actor=token, external_system="jira", external_id="S-1", replay_is_noop=True
        )
        return "won" if result.changed else "replayed"

    outcomes = race(
        [
            sync,
            lambda: _answer(
                lambda: services.commitment_complete(actor=world.knight, commitment_id=c.pk)
            ),
        ]
    )

    assert sorted(outcomes) in (["InvalidTransition", "won"], ["replayed", "won"])
    assert AuditEvent.objects.for_object(c).filter(action="completed").count() == 1
    assert OutboxEvent.objects.filter(commitment=c, kind="completed").count() == 1


@pytest.mark.parametrize("rounds", range(3))
@pytest.mark.parametrize("closing", ["complete", "withdraw", "sync"])
def test_a_request_for_more_time_and_a_closing_move_at_once_leave_none_open(world, rounds, closing):
    """The case a statement's snapshot would get wrong: a request for more
    time committed while the closing move's UPDATE waited for the row. The
    closing statement must not write over a row it did not read (it is made
    again, and supersedes the request), or the request must be refused."""
    c = world.active(external_system="jira", external_id=f"X-{rounds}")
    token = Actor.for_token(
        user=world.assigner, token_id=uuid.uuid4(), token_prefix="p", token_name="n"
    )

    def request() -> str:
        return _answer(
            lambda: services.commitment_extension_request(
                actor=world.knight, commitment_id=c.pk, deadline=LATER + dt.timedelta(days=7)
            )
        )

    def close() -> str:
        if closing == "complete":
            return _answer(
                lambda: services.commitment_complete(actor=world.lead, commitment_id=c.pk)
            )
        if closing == "withdraw":
            return _answer(
                lambda: services.commitment_withdraw(actor=world.lead, commitment_id=c.pk)
            )
        return _answer(
            lambda: services.commitment_complete(
                actor=token, external_system="jira", external_id=f"X-{rounds}", replay_is_noop=True
            )
        )

    outcomes = race([request, close])

    assert "won" in outcomes
    assert set(outcomes) <= {"won", "InvalidTransition"}
    c.refresh_from_db()
    assert c.status in (Status.COMPLETED, Status.WITHDRAWN)
    assert not Proposal.objects.filter(commitment=c, state="open").exists()
    made = Proposal.objects.filter(commitment=c).count()
    assert made == (1 if outcomes.count("won") == 2 else 0)
    if made:
        assert Proposal.objects.get(commitment=c).state == "superseded"


@pytest.mark.parametrize("rounds", range(3))
def test_an_accept_and_a_counter_proposal_at_once(world, rounds):
    """The accept goes straight to its UPDATE; the proposal reads first. An
    accept that came second supersedes the proposal; a proposal that came
    second is refused."""
    c = world.pending()

    def accept() -> str:
        return _answer(
            lambda: services.commitment_accept(
                actor=world.knight, commitment_id=c.pk, terms_version=1
            )
        )

    def propose() -> str:
        return _answer(
            lambda: services.commitment_propose(
                actor=world.knight, commitment_id=c.pk, terms_version=1, description="Other"
            )
        )

    outcomes = race([accept, propose])

    assert sorted(outcomes) in (["won", "won"], ["InvalidTransition", "won"])
    c.refresh_from_db()
    assert c.status == Status.ACTIVE
    assert not Proposal.objects.filter(commitment=c, state="open").exists()


def test_a_refused_move_answers_as_before(world, outsider):
    """Refusals after the compare-and-set: the same errors, nothing written."""
    c = world.pending()
    audit, outbox = _rows(c)
    with pytest.raises(InvalidTransition) as invalid:
        services.commitment_complete(actor=world.lead, commitment_id=c.pk)
    assert invalid.value.current_status == Status.PENDING_HANDSHAKE
    with pytest.raises(TermsChanged):
        services.commitment_accept(actor=world.knight, commitment_id=c.pk, terms_version=7)
    with pytest.raises(NotPermitted):
        services.commitment_accept(actor=Actor.for_user(outsider), commitment_id=c.pk)
    with pytest.raises(CommitmentNotFound):
        services.commitment_accept(actor=world.knight, commitment_id=uuid.uuid4())
    assert _rows(c) == (audit, outbox)
