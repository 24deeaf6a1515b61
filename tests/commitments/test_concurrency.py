"""Racing callers on PostgreSQL: the row lock lets exactly one transition through,
and the asker's row lock keeps asks at once within the daily invitation limit."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from audit.services import Actor
from commitments import services
from commitments.errors import AddressNotAskable, InvalidTransition
from commitments.models import Commitment, OutboxEvent, Status
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
