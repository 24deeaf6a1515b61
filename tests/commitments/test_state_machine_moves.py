"""The state machine's moves that need no commitment made beforehand, or one
of their own: creating a pending commitment (the assigner and their token
only), renegotiating, completing by external reference. Every (status,
action, actor) combination is in test_state_machine.py."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import Actor
from commitments import services
from commitments.errors import NotPermitted
from commitments.models import Commitment, EventKind, OutboxEvent, Status
from tests.harness.commitments import actor_for, commitment_in, snapshot

pytestmark = pytest.mark.django_db

LATER = timezone.now() + dt.timedelta(days=7)


@pytest.fixture
def people(assigner, assignee, outsider):
    return {"assigner": assigner, "assignee": assignee, "outsider": outsider}


def test_it_creates_pending_commitments_for_the_assigner_and_their_token(people):
    lead = people["assigner"]
    for actor in (Actor.for_user(lead), actor_for("assigner_token", people)):
        c = services.commitment_create_pending(
            actor=actor,
            assigner=lead,
            assignee=people["assignee"],
            description="  Ship it  ",
            deadline=None,
        )
        assert c.status == Status.PENDING_HANDSHAKE
        assert c.description == "Ship it"
        assert c.raw_text is None
        events = OutboxEvent.objects.filter(commitment=c, kind=EventKind.HANDSHAKE_REQUESTED)
        assert events.count() == 1
        assert AuditEvent.objects.for_object(c).get().action == "created"


@pytest.mark.parametrize("actor_name", ["assignee", "outsider", "assignee_token", "system"])
def test_it_refuses_creation_by_anyone_but_the_assigner(actor_name, people):
    with pytest.raises(NotPermitted):
        services.commitment_create_pending(
            actor=actor_for(actor_name, people),
            assigner=people["assigner"],
            assignee=people["assignee"],
            description="Ship it",
            deadline=None,
        )
    assert Commitment.objects.count() == 0
    assert AuditEvent.objects.count() == 0
    assert OutboxEvent.objects.count() == 0


def test_a_renegotiation_that_changes_nothing_is_refused(people):
    from commitments.errors import NothingChanged

    c = commitment_in(
        Status.PENDING_HANDSHAKE, people["assigner"], people["assignee"], deadline=LATER
    )
    before = snapshot(c)
    with pytest.raises(NothingChanged):
        services.commitment_renegotiate(
            actor=Actor.for_user(people["assigner"]),
            commitment_id=c.pk,
            description=c.description,
            deadline=c.deadline,
        )
    assert snapshot(c) == before


def test_a_renegotiated_deadline_asks_for_the_handshake_again(people):
    c = commitment_in(Status.REFUSED, people["assigner"], people["assignee"], deadline=LATER)
    new_deadline = LATER + dt.timedelta(days=1)
    services.commitment_renegotiate(
        actor=Actor.for_user(people["assigner"]), commitment_id=c.pk, deadline=new_deadline
    )
    c.refresh_from_db()
    assert c.status == Status.PENDING_HANDSHAKE
    assert c.deadline == new_deadline
    event = AuditEvent.objects.for_object(c).get(action="renegotiated")
    assert event.payload["changes"] == {"deadline": new_deadline.isoformat()}
    # The assignee may now accept the renegotiated terms.
    services.commitment_accept(actor=Actor.for_user(people["assignee"]), commitment_id=c.pk)
    c.refresh_from_db()
    assert c.status == Status.ACTIVE


def test_complete_by_external_ref_looks_only_among_the_actors_own_commitments(people):
    from commitments.errors import CommitmentNotFound

    lead, knight = people["assigner"], people["assignee"]
    c = services.commitment_create_pending(
        actor=Actor.for_user(lead),
        assigner=lead,
        assignee=knight,
        description="Fix OPS-42",
        deadline=None,
        external_system="jira",
        external_id="OPS-42",
    )
    services.commitment_accept(actor=Actor.for_user(knight), commitment_id=c.pk)
    stranger_token = actor_for("assignee_token", people)
    with pytest.raises(CommitmentNotFound):
        services.commitment_complete(
            actor=stranger_token, external_system="jira", external_id="OPS-42"
        )
    token = actor_for("assigner_token", people)
    result = services.commitment_complete(
        actor=token, external_system="jira", external_id="OPS-42", replay_is_noop=True
    )
    assert (result.previous_status, result.commitment.status, result.changed) == (
        Status.ACTIVE,
        Status.COMPLETED,
        True,
    )
    audits, outbox = AuditEvent.objects.count(), OutboxEvent.objects.count()
    replay = services.commitment_complete(
        actor=token, external_system="jira", external_id="OPS-42", replay_is_noop=True
    )
    assert replay.changed is False
    assert replay.commitment.status == Status.COMPLETED
    assert (AuditEvent.objects.count(), OutboxEvent.objects.count()) == (audits, outbox)
