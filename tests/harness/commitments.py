"""Helpers shared by the commitments tests."""

from __future__ import annotations

import datetime as dt
import uuid

from django.contrib.contenttypes.models import ContentType
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import Actor
from commitments import services
from commitments.models import Commitment, OutboxEvent, Status

DEADLINE = dt.datetime(2030, 1, 1, 0, 0, tzinfo=dt.UTC)


def commitment_in(status: str, assigner, assignee, *, deadline=DEADLINE) -> Commitment:
    """Reach a status the way users do: through the services."""
    lead, knight = Actor.for_user(assigner), Actor.for_user(assignee)
    c = services.commitment_create_draft(
        actor=lead, assignee=assignee, description="Write the report", deadline=deadline
    )
    if status != Status.DRAFT:
        services.commitment_send_for_handshake(actor=lead, commitment_id=c.pk)
    if status == Status.REFUSED:
        services.commitment_decline(actor=knight, commitment_id=c.pk)
    if status in (Status.ACTIVE, Status.COMPLETED):
        services.commitment_accept(actor=knight, commitment_id=c.pk)
    if status == Status.COMPLETED:
        services.commitment_complete(actor=knight, commitment_id=c.pk)
    if status == Status.WITHDRAWN:
        services.commitment_withdraw(actor=lead, commitment_id=c.pk)
    c.refresh_from_db()
    assert c.status == status
    return c


def tracked_active(assigner, assignee, external_id: str, *, system: str = "jira") -> Commitment:
    """An Active commitment of the assigner's with a tracker's reference (as
    the inbox makes one, then accepted): what a completing sync finds."""
    commitment = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Ship it",
        deadline=None,
        external_system=system,
        external_id=external_id,
    )
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    return commitment


def actor_for(name: str, people) -> Actor:
    """The actor a state machine test names: "system", a person of `people`
    ("assigner"), or a token of theirs ("assigner_token")."""
    if name == "system":
        return Actor.system()
    if name.endswith("_token"):
        owner = people[name.removesuffix("_token")]
        return Actor.for_token(user=owner, token_id=uuid.uuid4(), token_prefix="svc_test")
    return Actor.for_user(people[name])


def snapshot(c: Commitment) -> tuple:
    """Every stored column of the commitment, and how many audit rows about
    commitments and outbox rows exist at all: equal snapshots mean nothing
    changed. (Signing in is on the trail too, about the user.)"""
    c.refresh_from_db()
    fields = [f.attname for f in Commitment._meta.concrete_fields]
    return (
        tuple(getattr(c, f) for f in fields),
        AuditEvent.objects.filter(
            subject_type=ContentType.objects.get_for_model(Commitment)
        ).count(),
        OutboxEvent.objects.count(),
    )


def many_commitments(assigner, assignee, n: int) -> None:
    """`n` commitments between the two (each asks the other, and drafts), in
    every status, with deadlines around now and completions over the last 80
    days, written in bulk. Every seventh is Withdrawn; the others go round
    the statuses before it (so each person has some of each)."""
    statuses = [s.value for s in Status if s != Status.WITHDRAWN]
    now = timezone.now()
    rows = []
    for i in range(n):
        status = statuses[i % len(statuses)] if i % 7 != 6 else Status.WITHDRAWN
        accepted = status in (Status.ACTIVE, Status.COMPLETED)
        rows.append(
            Commitment(
                assigner=assigner if i % 2 else assignee,
                assignee=assignee if i % 2 else assigner,
                status=status,
                description=f"Bulk {i}",
                deadline=now + dt.timedelta(days=(i % 40) - 20),
                external_system="jira" if i % 3 == 0 else None,
                external_id=f"OPS-{i}" if i % 3 == 0 else None,
                activated_at=now - dt.timedelta(days=85) if accepted else None,
                completed_at=now - dt.timedelta(days=i % 80)
                if status == Status.COMPLETED
                else None,
                refused_at=now - dt.timedelta(days=i % 30) if status == Status.REFUSED else None,
                withdrawn_at=now - dt.timedelta(days=i % 9) if status == Status.WITHDRAWN else None,
            )
        )
    Commitment.objects.bulk_create(rows)


def ask(
    assigner, assignee, description: str = "Ship the report", *, deadline: dt.datetime | None = None
) -> Commitment:
    """A request by the assigner (Pending_Handshake), as the New commitment page makes it."""
    return services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description=description,
        deadline=deadline,
    )


def renegotiate(assigner, commitment: Commitment, description: str) -> None:
    """The assigner changes the request's description (the handshake asked again)."""
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=commitment.pk, description=description
    )
