"""Racing callers on PostgreSQL: the row lock lets exactly one transition through
(and one answer to a proposal), and the asker's row lock keeps asks at once
within the daily invitation limit."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from audit.services import Actor
from commitments import services
from commitments.errors import AddressNotAskable, InvalidTransition, ProposalNotOpen
from commitments.models import Commitment, OutboxEvent, Proposal, Status
from tests.harness.concurrency import race


@pytest.mark.postgres
@pytest.mark.parametrize("rounds", range(3))
def test_two_threads_completing_at_once_make_exactly_one_transition(rounds, assigner, assignee):
    lead, knight = Actor.for_user(assigner), Actor.for_user(assignee)
    c = services.commitment_create_pending(
        actor=lead, assigner=assigner, assignee=assignee, description="Race me", deadline=None
    )
    services.commitment_accept(actor=knight, commitment_id=c.pk)

    def completer(actor: Actor):
        def complete() -> str:
            try:
                services.commitment_complete(actor=actor, commitment_id=c.pk)
            except InvalidTransition as exc:
                return f"refused:{exc.current_status}"
            return "completed"

        return complete

    outcomes = race([completer(lead), completer(knight)])

    assert sorted(outcomes) == ["completed", "refused:Completed"]
    c.refresh_from_db()
    assert c.status == Status.COMPLETED
    assert AuditEvent.objects.for_object(c).filter(action="completed").count() == 1
    assert OutboxEvent.objects.filter(commitment=c, kind="completed").count() == 1


@pytest.mark.postgres
@pytest.mark.parametrize("rounds", range(3))
def test_asks_at_once_cannot_invite_past_the_daily_limit(rounds, assigner, settings):
    settings.INVITATIONS_PER_DAY = 3
    lead = Actor.for_user(assigner)

    def asker(n: int):
        def ask() -> str:
            try:
                services.commitment_ask(
                    actor=lead,
                    assignee_email=f"stranger{n}@example.com",
                    description="Race me",
                    deadline=None,
                    send=True,
                )
            except AddressNotAskable:
                return "refused"
            return "invited"

        return ask

    outcomes = race([asker(n) for n in range(8)])

    assert sorted(outcomes) == ["invited"] * 3 + ["refused"] * 5
    assert Commitment.objects.filter(assigner=assigner, invitation__isnull=False).count() == 3


@pytest.mark.postgres
@pytest.mark.parametrize("rounds", range(3))
def test_two_answers_to_one_proposal_at_once_one_wins_one_is_told(rounds, assigner, assignee):
    """Accept and decline of the same counter-proposal, at once: the row lock
    lets one through; the other, reading the proposal after the lock, is told
    it was answered already, and writes nothing."""
    lead, knight = Actor.for_user(assigner), Actor.for_user(assignee)
    c = services.commitment_create_pending(
        actor=lead, assigner=assigner, assignee=assignee, description="Race me", deadline=None
    )
    proposal = services.commitment_propose(
        actor=knight, commitment_id=c.pk, terms_version=1, description="Race me tomorrow"
    )

    def answer(move, name: str):
        def call() -> str:
            try:
                move(actor=lead, commitment_id=c.pk, proposal_id=proposal.pk)
            except ProposalNotOpen:
                return "told"
            return name

        return call

    outcomes = race(
        [
            answer(services.commitment_proposal_accept, "accepted"),
            answer(services.commitment_proposal_decline, "declined"),
        ]
    )

    assert sorted(outcomes) in (["accepted", "told"], ["declined", "told"])
    won = "accepted" if "accepted" in outcomes else "declined"
    proposal.refresh_from_db()
    c.refresh_from_db()
    assert proposal.state == won
    assert c.status == (Status.ACTIVE if won == "accepted" else Status.PENDING_HANDSHAKE)
    answers = AuditEvent.objects.for_object(c).filter(
        action__in=["proposal_accepted", "proposal_declined"]
    )
    assert answers.count() == 1
    kinds = set(OutboxEvent.objects.filter(commitment=c).values_list("kind", flat=True))
    assert kinds == {
        "handshake_requested",
        "proposed",
        "activated" if won == "accepted" else "proposal_declined",
    }


@pytest.mark.postgres
@pytest.mark.parametrize("rounds", range(3))
def test_a_proposal_and_a_withdrawal_at_once_leave_no_open_proposal(rounds, assigner, assignee):
    """Whichever comes second sees the first: a withdrawal that waited for a
    proposal's lock supersedes it (its write matches what is open when it
    runs), a proposal that waited for the withdrawal is refused."""
    lead, knight = Actor.for_user(assigner), Actor.for_user(assignee)
    c = services.commitment_create_pending(
        actor=lead, assigner=assigner, assignee=assignee, description="Race me", deadline=None
    )

    def propose() -> str:
        try:
            services.commitment_propose(
                actor=knight, commitment_id=c.pk, terms_version=1, description="Other"
            )
        except InvalidTransition:
            return "refused"
        return "proposed"

    def withdraw() -> str:
        services.commitment_withdraw(actor=lead, commitment_id=c.pk)
        return "withdrawn"

    outcomes = race([propose, withdraw])

    assert "withdrawn" in outcomes
    c.refresh_from_db()
    assert c.status == Status.WITHDRAWN
    assert not Proposal.objects.filter(commitment=c, state="open").exists()
    assert Proposal.objects.filter(commitment=c).count() == (1 if "proposed" in outcomes else 0)
