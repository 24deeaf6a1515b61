"""Every (status, action, actor) combination of the state machine (docs/api.md,
"Statuses and moves").

Allowed moves change the status, stamp the transition time, and write exactly
one audit row and the expected outbox row. Refused moves raise and change
nothing at all.
"""

from __future__ import annotations

import datetime as dt
import itertools
import uuid

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import Actor
from commitments import services
from commitments.errors import CommitmentError, InvalidTransition, NotPermitted
from commitments.models import Comment, Commitment, EventKind, OutboxEvent, Proposal, Status
from tests.harness.commitments import actor_for, commitment_in, snapshot

pytestmark = pytest.mark.django_db

STATUSES = [s.value for s in Status]
ACTORS = ["assigner", "assignee", "outsider", "assigner_token", "assignee_token", "system"]
LATER = timezone.now() + dt.timedelta(days=7)
LATER_STILL = LATER + dt.timedelta(days=3)

SAME = None  # the move keeps the status it starts from
OPEN_STATUSES = {Status.PENDING_HANDSHAKE, Status.ACTIVE, Status.REFUSED}


def _open_proposal(c):
    """The proposal a move answers: an open one, made by the assignee when
    the status lets them (a counter-proposal while it waits, more time once
    Active); a made-up id otherwise."""
    knight = Actor.for_user(c.assignee)
    if c.status == Status.PENDING_HANDSHAKE:
        return services.commitment_propose(
            actor=knight, commitment_id=c.pk, terms_version=c.terms_version, deadline=LATER_STILL
        ).pk
    if c.status == Status.ACTIVE:
        return services.commitment_extension_request(
            actor=knight, commitment_id=c.pk, deadline=LATER_STILL
        ).pk
    return uuid.uuid4()


# action -> (function, allowed statuses, allowed actors, resulting status (SAME:
#            unchanged), stamped field, audit action, outbox event kind)
# A function takes the actor, the commitment and what `SETUP` made for it.
SETUP = {
    "accept_proposal": _open_proposal,
    "decline_proposal": _open_proposal,
    "grant_extension": _open_proposal,
    "decline_extension": _open_proposal,
}
ACTIONS = {
    "send": (
        lambda actor, c, _: services.commitment_send_for_handshake(actor=actor, commitment_id=c.pk),
        {Status.DRAFT},
        {"assigner"},
        Status.PENDING_HANDSHAKE,
        None,
        "sent_for_handshake",
        EventKind.HANDSHAKE_REQUESTED,
    ),
    "accept": (
        lambda actor, c, _: services.commitment_accept(actor=actor, commitment_id=c.pk),
        {Status.PENDING_HANDSHAKE},
        {"assignee"},
        Status.ACTIVE,
        "activated_at",
        "accepted",
        EventKind.ACTIVATED,
    ),
    "decline": (
        lambda actor, c, _: services.commitment_decline(actor=actor, commitment_id=c.pk),
        {Status.PENDING_HANDSHAKE},
        {"assignee"},
        Status.REFUSED,
        "refused_at",
        "declined",
        EventKind.REFUSED,
    ),
    "complete": (
        lambda actor, c, _: services.commitment_complete(actor=actor, commitment_id=c.pk),
        {Status.ACTIVE},
        {"assigner", "assignee", "assigner_token"},
        Status.COMPLETED,
        "completed_at",
        "completed",
        EventKind.COMPLETED,
    ),
    "renegotiate": (
        lambda actor, c, _: services.commitment_renegotiate(
            actor=actor, commitment_id=c.pk, description=c.description + " (revised)"
        ),
        {Status.PENDING_HANDSHAKE, Status.REFUSED},
        {"assigner"},
        Status.PENDING_HANDSHAKE,
        "renegotiated_at",
        "renegotiated",
        EventKind.RENEGOTIATED,
    ),
    "edit_draft": (
        lambda actor, c, _: services.commitment_update_draft(
            actor=actor, commitment_id=c.pk, description="Edited draft"
        ),
        {Status.DRAFT},
        {"assigner"},
        Status.DRAFT,
        None,
        "draft_edited",
        None,
    ),
    # The conversation (issue 26)
    "propose": (
        lambda actor, c, _: services.commitment_propose(
            actor=actor, commitment_id=c.pk, terms_version=c.terms_version, deadline=LATER_STILL
        ),
        {Status.PENDING_HANDSHAKE},
        {"assignee"},
        SAME,
        None,
        "proposed",
        EventKind.PROPOSED,
    ),
    "accept_proposal": (
        lambda actor, c, proposal_id: services.commitment_proposal_accept(
            actor=actor, commitment_id=c.pk, proposal_id=proposal_id
        ),
        {Status.PENDING_HANDSHAKE},
        {"assigner"},
        Status.ACTIVE,
        "activated_at",
        "proposal_accepted",
        EventKind.ACTIVATED,
    ),
    "decline_proposal": (
        lambda actor, c, proposal_id: services.commitment_proposal_decline(
            actor=actor, commitment_id=c.pk, proposal_id=proposal_id
        ),
        {Status.PENDING_HANDSHAKE},
        {"assigner"},
        SAME,
        None,
        "proposal_declined",
        EventKind.PROPOSAL_DECLINED,
    ),
    "request_extension": (
        lambda actor, c, _: services.commitment_extension_request(
            actor=actor, commitment_id=c.pk, deadline=LATER_STILL
        ),
        {Status.ACTIVE},
        {"assignee"},
        SAME,
        None,
        "extension_requested",
        EventKind.EXTENSION_REQUESTED,
    ),
    "grant_extension": (
        lambda actor, c, proposal_id: services.commitment_extension_grant(
            actor=actor, commitment_id=c.pk, proposal_id=proposal_id
        ),
        {Status.ACTIVE},
        {"assigner"},
        SAME,
        None,
        "extension_granted",
        EventKind.EXTENSION_GRANTED,
    ),
    "decline_extension": (
        lambda actor, c, proposal_id: services.commitment_extension_decline(
            actor=actor, commitment_id=c.pk, proposal_id=proposal_id
        ),
        {Status.ACTIVE},
        {"assigner"},
        SAME,
        None,
        "extension_declined",
        EventKind.EXTENSION_DECLINED,
    ),
    "comment": (
        lambda actor, c, _: services.commitment_comment(
            actor=actor, commitment_id=c.pk, body="Any news?"
        ),
        {s.value for s in Status} - {Status.DRAFT},
        {"assigner", "assignee"},
        SAME,
        None,
        "commented",
        EventKind.COMMENTED,
    ),
    "withdraw": (
        lambda actor, c, _: services.commitment_withdraw(actor=actor, commitment_id=c.pk),
        OPEN_STATUSES,
        {"assigner"},
        Status.WITHDRAWN,
        "withdrawn_at",
        "withdrawn",
        EventKind.WITHDRAWN,
    ),
    "reassign": (
        lambda actor, c, _: services.commitment_reassign(
            actor=actor, commitment_id=c.pk, assignee_email="squire@example.com"
        ),
        OPEN_STATUSES,
        {"assigner"},
        Status.PENDING_HANDSHAKE,
        None,
        "reassigned",
        EventKind.REASSIGNED,
    ),
}
# The tracker connection's own moves are in tests/trackers.


PEOPLE = {
    "assigner": ("lead@example.com", "Lead"),
    "assignee": ("knight@example.com", "Knight"),
    "outsider": ("outsider@example.com", ""),
    "squire": ("squire@example.com", ""),  # whom a reassignment asks
}


@pytest.fixture(scope="module")
def _rows_made_once(django_db_setup, django_db_blocker):
    """The people of this module's several hundred tests, made once (as
    `make_user` makes them: verified addresses), and one commitment in each
    status between the assigner and the assignee (`commitment_in`: through
    the services, as users reach it), in a transaction rolled back when the
    module is done; each test runs inside it, in a savepoint of its own
    (pytest-django's), so each starts from the same rows and its move is
    undone before the next. A case's commitment has the other statuses' six
    beside it; no move looks at another commitment, and the assertions count
    the rows each move adds, not all of them. The tests that need no
    commitment beforehand are in test_state_machine_moves.py."""
    from django.db import transaction
    from django.test import override_settings

    from accounts.models import User
    from accounts.services import user_email_mark_verified

    with (
        django_db_blocker.unblock(),
        override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]),
        transaction.atomic(),
    ):
        users = {}
        for name, (email, display_name) in PEOPLE.items():
            extra = {"display_name": display_name} if display_name else {}
            user = User.objects.create_user(email, "correct horse battery", **extra)
            user_email_mark_verified(user=user)
            users[name] = user
        commitments = {
            status: commitment_in(status, users["assigner"], users["assignee"], deadline=LATER).pk
            for status in STATUSES
        }
        yield {name: user.pk for name, user in users.items()}, commitments
        transaction.set_rollback(True)


@pytest.fixture
def people(_rows_made_once, db):
    from accounts.models import User

    pks, _ = _rows_made_once
    users = User.objects.in_bulk(list(pks.values()))
    return {name: users[pk] for name, pk in pks.items() if name != "squire"}


@pytest.fixture
def commitment_at(_rows_made_once, db):
    """The module's commitment in a status, as stored now (this test's own
    savepoint undoes what the test does to it)."""
    _, commitments = _rows_made_once
    return lambda status: Commitment.objects.get(pk=commitments[status])


@pytest.mark.parametrize(
    ("status", "action", "actor_name"),
    list(itertools.product(STATUSES, ACTIONS, ACTORS)),
)
def test_every_status_action_actor_combination(status, action, actor_name, people, commitment_at):
    fn, statuses, actors, to, stamp, audit_action, event_kind = ACTIONS[action]
    to = status if to is SAME else to
    c = commitment_at(status)
    assert c.status == status
    made = SETUP[action](c) if action in SETUP else None
    actor = actor_for(actor_name, people)
    before = snapshot(c)
    proposals_before = list(Proposal.objects.values_list("pk", "state").order_by("pk"))
    comments_before = Comment.objects.count()
    audit_before = set(AuditEvent.objects.values_list("pk", flat=True))
    outbox_before = set(OutboxEvent.objects.values_list("pk", flat=True))

    if status in statuses and actor_name in actors:
        result = fn(actor, c, made)
        c.refresh_from_db()
        assert c.status == to
        if stamp:
            assert getattr(c, stamp) is not None
            assert getattr(c, stamp) == c.updated_at
        new_audit = AuditEvent.objects.exclude(pk__in=audit_before)
        assert [e.action for e in new_audit] == [audit_action]
        event = new_audit.get()
        assert event.actor_kind == actor.kind
        assert event.user == actor.user
        assert event.token_id == actor.token_id
        assert event.subject_id == c.pk
        new_outbox = OutboxEvent.objects.exclude(pk__in=outbox_before)
        if event_kind is None:
            assert not new_outbox.exists()
        else:
            out = new_outbox.get()
            assert out.kind == event_kind
            assert (out.previous_status, out.new_status) == (status, to)
            assert out.actor_kind == actor.kind
            assert out.actor_token_id == actor.token_id
        if hasattr(result, "changed"):
            assert result.changed is True
            assert result.previous_status == status
    else:
        with pytest.raises(CommitmentError) as excinfo:
            fn(actor, c, made)
        if actor_name in actors:
            # The right person, the wrong moment: the error names the status.
            assert isinstance(excinfo.value, InvalidTransition)
            assert excinfo.value.current_status == status
            assert status in str(excinfo.value)
        else:
            assert isinstance(excinfo.value, NotPermitted)
        assert snapshot(c) == before
        assert list(Proposal.objects.values_list("pk", "state").order_by("pk")) == proposals_before
        assert Comment.objects.count() == comments_before
