"""The conversation around a commitment (issue 26), move by move: who may
make each (the other person, a stranger, staff, a token: refused with nothing
written), its audit row and its outbox row (kind and detail), stale terms,
one open proposal at a time, and what each move leaves behind. Every
(status, move, actor) combination is in test_state_machine.py."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import Actor
from commitments import selectors, services
from commitments.errors import (
    AddressNotAskable,
    CommentInvalid,
    CommitmentError,
    InvalidTransition,
    NothingChanged,
    NotPermitted,
    ProposalAlreadyOpen,
    ProposalInvalid,
    ProposalNotOpen,
    ReassignInvalid,
    TermsChanged,
)
from commitments.models import (
    COMMENT_MAX,
    NOTE_MAX,
    Comment,
    Commitment,
    EventKind,
    Invitation,
    OutboxEvent,
    Proposal,
    ProposalState,
    Status,
)
from tests.harness.commitments import DEADLINE, commitment_in

pytestmark = pytest.mark.django_db

LATER = DEADLINE + dt.timedelta(days=3)


def _rows() -> tuple:
    """Every row a move may write: equal before and after = nothing written."""
    commitment_type = ContentType.objects.get_for_model(Commitment)
    return (
        sorted(
            (str(c.pk), c.status, c.terms_version, c.deadline, c.description, c.assignee_id)
            for c in Commitment.objects.all()
        ),
        AuditEvent.objects.filter(subject_type=commitment_type).count(),
        OutboxEvent.objects.count(),
        sorted(Proposal.objects.values_list("pk", "state")),
        Comment.objects.count(),
    )


def _last_audit(c):
    return AuditEvent.objects.for_object(c).order_by("-occurred_at", "-pk").first()


def _last_event(c):
    return OutboxEvent.objects.filter(commitment=c).order_by("-id").first()


@pytest.fixture
def lead(assigner):
    return Actor.for_user(assigner)


@pytest.fixture
def knight(assignee):
    return Actor.for_user(assignee)


@pytest.fixture
def pending(assigner, assignee):
    return commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)


@pytest.fixture
def active(assigner, assignee):
    return commitment_in(Status.ACTIVE, assigner, assignee)


def _strangers(assigner, outsider, staff, *, mover):
    """Everyone who is not `mover` and must be refused: the other person, a
    stranger, staff (superuser), the assigner's token, the system."""
    return {
        "other person": mover,
        "stranger": Actor.for_user(outsider),
        "staff": Actor.for_user(staff),
        "token": Actor.for_token(user=assigner, token_id=uuid.uuid4(), token_prefix="svc_t"),
        "system": Actor.system(),
    }


# --- counter-proposals ------------------------------------------------------------------


def test_a_counter_proposal_keeps_the_request_waiting_with_an_open_proposal(
    pending, knight, assigner
):
    proposal = services.commitment_propose(
        actor=knight,
        commitment_id=pending.pk,
        terms_version=pending.terms_version,
        deadline=LATER,
        note="  Friday, not Tuesday  ",
    )

    pending.refresh_from_db()
    assert pending.status == Status.PENDING_HANDSHAKE
    assert pending.deadline == DEADLINE  # the terms asked stay until accepted
    assert (proposal.state, proposal.kind, proposal.deadline) == ("open", "counter", LATER)
    assert proposal.description is None  # unchanged
    assert (proposal.terms_version, proposal.previous_deadline) == (1, DEADLINE)
    assert proposal.note == "Friday, not Tuesday"
    audit = _last_audit(pending)
    assert audit.action == "proposed"
    assert audit.payload["proposalId"] == str(proposal.pk)
    assert audit.payload["deadline"] == LATER.isoformat()
    event = _last_event(pending)
    assert event.kind == EventKind.PROPOSED
    assert event.detail == {"proposalId": str(proposal.pk)}
    assert (event.previous_status, event.new_status) == (Status.PENDING_HANDSHAKE,) * 2
    assert event.occurred_at == pending.updated_at
    assert selectors.proposal_open_for(commitment=pending) == proposal


@pytest.mark.parametrize("who", ["other person", "stranger", "staff", "token", "system"])
def test_only_the_assignee_proposes(who, pending, lead, assigner, outsider, staff):
    actor = _strangers(assigner, outsider, staff, mover=lead)[who]
    before = _rows()
    with pytest.raises(NotPermitted):
        services.commitment_propose(
            actor=actor, commitment_id=pending.pk, terms_version=1, deadline=LATER
        )
    assert _rows() == before


def test_a_proposal_on_stale_terms_is_refused(pending, lead, knight):
    services.commitment_renegotiate(actor=lead, commitment_id=pending.pk, description="Revised")
    before = _rows()
    with pytest.raises(TermsChanged):
        services.commitment_propose(
            actor=knight, commitment_id=pending.pk, terms_version=1, deadline=LATER
        )
    assert _rows() == before


def test_a_proposal_that_changes_nothing_is_refused(pending, knight):
    before = _rows()
    for terms in ({"deadline": DEADLINE}, {"description": "Write the report"}, {}):
        with pytest.raises(NothingChanged):
            services.commitment_propose(
                actor=knight, commitment_id=pending.pk, terms_version=1, **terms
            )
    assert _rows() == before


def test_one_open_proposal_at_a_time(pending, knight):
    services.commitment_propose(
        actor=knight, commitment_id=pending.pk, terms_version=1, deadline=LATER
    )
    before = _rows()
    with pytest.raises(ProposalAlreadyOpen):
        services.commitment_propose(
            actor=knight, commitment_id=pending.pk, terms_version=1, description="Shorter"
        )
    assert _rows() == before


def test_accepting_a_proposal_makes_its_terms_the_commitments_and_activates_it(
    pending, knight, lead, assignee
):
    proposal = services.commitment_propose(
        actor=knight,
        commitment_id=pending.pk,
        terms_version=1,
        deadline=LATER,
        description="Write the short report",
    )
    result = services.commitment_proposal_accept(
        actor=lead, commitment_id=pending.pk, proposal_id=proposal.pk
    )

    c = result.commitment
    c.refresh_from_db()
    assert (result.previous_status, c.status) == (Status.PENDING_HANDSHAKE, Status.ACTIVE)
    assert (c.deadline, c.description, c.terms_version) == (LATER, "Write the short report", 2)
    assert c.activated_at == c.updated_at
    proposal.refresh_from_db()
    assert (proposal.state, proposal.answered_by_id) == ("accepted", lead.user.pk)
    audit = _last_audit(c)
    assert audit.action == "proposal_accepted"
    assert audit.payload["changes"] == {
        "description": "Write the short report",
        "deadline": LATER.isoformat(),
    }
    assert audit.payload["previous"]["deadline"] == DEADLINE.isoformat()
    event = _last_event(c)
    # The contract's event, by the assigner: the assignee is told.
    assert (event.kind, event.actor_user_id) == (EventKind.ACTIVATED, lead.user.pk)
    assert (event.previous_status, event.new_status) == (Status.PENDING_HANDSHAKE, Status.ACTIVE)
    assert event.detail == {"proposalId": str(proposal.pk)}
    assert selectors.proposal_open_for(commitment=c) is None
    # What changed since version 1, as the terms-changed page reads it.
    assert selectors.commitment_terms_changes_since(commitment=c, terms_version=1) == {
        "description": "Write the short report",
        "deadline": LATER,
    }


def test_declining_a_proposal_leaves_the_terms_asked_waiting(pending, knight, lead):
    proposal = services.commitment_propose(
        actor=knight, commitment_id=pending.pk, terms_version=1, deadline=LATER
    )
    declined = services.commitment_proposal_decline(
        actor=lead, commitment_id=pending.pk, proposal_id=proposal.pk, note="Tuesday it is"
    )

    pending.refresh_from_db()
    assert (pending.status, pending.deadline, pending.terms_version) == (
        Status.PENDING_HANDSHAKE,
        DEADLINE,
        1,
    )
    assert (declined.state, declined.answer_note) == ("declined", "Tuesday it is")
    assert _last_audit(pending).action == "proposal_declined"
    event = _last_event(pending)
    assert (event.kind, event.detail) == (
        EventKind.PROPOSAL_DECLINED,
        {"proposalId": str(proposal.pk)},
    )
    # The assignee may answer the terms asked, or propose again.
    services.commitment_accept(actor=knight, commitment_id=pending.pk, terms_version=1)


@pytest.mark.parametrize("answer", ["accept", "decline"])
@pytest.mark.parametrize("who", ["other person", "stranger", "staff", "token", "system"])
def test_only_the_assigner_answers_a_proposal(
    answer, who, pending, knight, assigner, outsider, staff
):
    proposal = services.commitment_propose(
        actor=knight, commitment_id=pending.pk, terms_version=1, deadline=LATER
    )
    actor = _strangers(assigner, outsider, staff, mover=knight)[who]
    move = {
        "accept": services.commitment_proposal_accept,
        "decline": services.commitment_proposal_decline,
    }[answer]
    before = _rows()
    with pytest.raises(NotPermitted):
        move(actor=actor, commitment_id=pending.pk, proposal_id=proposal.pk)
    assert _rows() == before


def test_an_answered_or_unknown_proposal_is_not_open(pending, knight, lead, assigner, assignee):
    proposal = services.commitment_propose(
        actor=knight, commitment_id=pending.pk, terms_version=1, deadline=LATER
    )
    services.commitment_proposal_decline(
        actor=lead, commitment_id=pending.pk, proposal_id=proposal.pk
    )
    other = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    elsewhere = services.commitment_propose(
        actor=knight, commitment_id=other.pk, terms_version=1, deadline=LATER
    )
    before = _rows()
    for proposal_id in (proposal.pk, elsewhere.pk, uuid.uuid4()):
        with pytest.raises(ProposalNotOpen, match="answered already"):
            services.commitment_proposal_accept(
                actor=lead, commitment_id=pending.pk, proposal_id=proposal_id
            )
    assert _rows() == before


@pytest.mark.parametrize(
    "move",
    ["accept", "decline", "renegotiate", "withdraw", "reassign"],
)
def test_a_move_that_changes_the_terms_status_or_person_supersedes_the_open_proposal(
    move, pending, knight, lead, make_user
):
    make_user("squire@example.com")
    proposal = services.commitment_propose(
        actor=knight, commitment_id=pending.pk, terms_version=1, deadline=LATER
    )
    {
        "accept": lambda: services.commitment_accept(actor=knight, commitment_id=pending.pk),
        "decline": lambda: services.commitment_decline(actor=knight, commitment_id=pending.pk),
        "renegotiate": lambda: services.commitment_renegotiate(
            actor=lead, commitment_id=pending.pk, description="Other words"
        ),
        "withdraw": lambda: services.commitment_withdraw(actor=lead, commitment_id=pending.pk),
        "reassign": lambda: services.commitment_reassign(
            actor=lead, commitment_id=pending.pk, assignee_email="squire@example.com"
        ),
    }[move]()

    proposal.refresh_from_db()
    assert proposal.state == ProposalState.SUPERSEDED
    assert proposal.answered_at is not None
    with pytest.raises(ProposalNotOpen):
        services.commitment_proposal_accept(
            actor=lead, commitment_id=pending.pk, proposal_id=proposal.pk
        )


# --- more time --------------------------------------------------------------------------


def test_more_time_asked_then_granted_moves_the_deadline_and_stays_active(active, knight, lead):
    asked = services.commitment_extension_request(
        actor=knight, commitment_id=active.pk, deadline=LATER, note="The data came late"
    )
    event = _last_event(active)
    assert event.kind == EventKind.EXTENSION_REQUESTED
    assert event.detail == {"proposalId": str(asked.pk), "afterDeadline": False}
    assert _last_audit(active).payload["previousDeadline"] == DEADLINE.isoformat()

    granted = services.commitment_extension_grant(
        actor=lead, commitment_id=active.pk, proposal_id=asked.pk
    )

    active.refresh_from_db()
    assert (active.status, active.deadline, active.terms_version) == (Status.ACTIVE, LATER, 2)
    assert granted.state == ProposalState.ACCEPTED
    assert _last_audit(active).action == "extension_granted"
    event = _last_event(active)
    assert (event.kind, event.detail) == (
        EventKind.EXTENSION_GRANTED,
        {"proposalId": str(asked.pk)},
    )
    assert (event.previous_status, event.new_status) == (Status.ACTIVE, Status.ACTIVE)


def test_more_time_declined_keeps_the_deadline(active, knight, lead):
    asked = services.commitment_extension_request(
        actor=knight, commitment_id=active.pk, deadline=LATER
    )
    services.commitment_extension_decline(
        actor=lead, commitment_id=active.pk, proposal_id=asked.pk, note="x" * (NOTE_MAX + 50)
    )
    active.refresh_from_db()
    assert (active.deadline, active.terms_version) == (DEADLINE, 1)
    asked.refresh_from_db()
    assert (asked.state, len(asked.answer_note)) == ("declined", NOTE_MAX)
    assert _last_event(active).kind == EventKind.EXTENSION_DECLINED


def test_more_time_may_be_asked_after_the_deadline_and_says_so(assigner, assignee, knight):
    gone = timezone.now() - dt.timedelta(days=2)
    c = commitment_in(Status.ACTIVE, assigner, assignee, deadline=gone)
    services.commitment_extension_request(actor=knight, commitment_id=c.pk, deadline=LATER)
    assert _last_audit(c).payload["afterDeadline"] is True
    assert _last_event(c).detail["afterDeadline"] is True


@pytest.mark.parametrize(
    "deadline",
    [None, DEADLINE, DEADLINE - dt.timedelta(days=1)],
    ids=["none", "the same", "earlier"],
)
def test_more_time_needs_a_later_deadline(deadline, active, knight):
    before = _rows()
    with pytest.raises(ProposalInvalid):
        services.commitment_extension_request(
            actor=knight, commitment_id=active.pk, deadline=deadline
        )
    assert _rows() == before


def test_more_time_on_a_commitment_without_a_deadline_is_refused(assigner, assignee, knight):
    c = commitment_in(Status.ACTIVE, assigner, assignee, deadline=None)
    with pytest.raises(ProposalInvalid, match="no deadline"):
        services.commitment_extension_request(actor=knight, commitment_id=c.pk, deadline=LATER)


@pytest.mark.parametrize("who", ["other person", "stranger", "staff", "token", "system"])
def test_only_the_assignee_asks_and_only_the_assigner_grants(
    who, active, knight, lead, assigner, outsider, staff
):
    asker = _strangers(assigner, outsider, staff, mover=lead)[who]
    before = _rows()
    with pytest.raises(NotPermitted):
        services.commitment_extension_request(actor=asker, commitment_id=active.pk, deadline=LATER)
    assert _rows() == before
    asked = services.commitment_extension_request(
        actor=knight, commitment_id=active.pk, deadline=LATER
    )
    granter = _strangers(assigner, outsider, staff, mover=knight)[who]
    before = _rows()
    for move in (services.commitment_extension_grant, services.commitment_extension_decline):
        with pytest.raises(NotPermitted):
            move(actor=granter, commitment_id=active.pk, proposal_id=asked.pk)
    assert _rows() == before


def test_completing_supersedes_a_request_for_more_time(active, knight):
    asked = services.commitment_extension_request(
        actor=knight, commitment_id=active.pk, deadline=LATER
    )
    services.commitment_complete(actor=knight, commitment_id=active.pk)
    asked.refresh_from_db()
    assert asked.state == ProposalState.SUPERSEDED


def test_a_counter_proposal_cannot_be_granted_as_more_time(pending, knight, lead):
    proposal = services.commitment_propose(
        actor=knight, commitment_id=pending.pk, terms_version=1, deadline=LATER
    )
    with pytest.raises(InvalidTransition):  # a request waiting: there is no more time to grant
        services.commitment_extension_grant(
            actor=lead, commitment_id=pending.pk, proposal_id=proposal.pk
        )


# --- comments ---------------------------------------------------------------------------


@pytest.mark.parametrize("author", ["assigner", "assignee"])
def test_both_people_comment_and_the_other_is_told(author, active, lead, knight):
    actor = {"assigner": lead, "assignee": knight}[author]
    comment = services.commitment_comment(
        actor=actor, commitment_id=active.pk, body="  <b>Any</b> news?\n"
    )
    assert (comment.body, comment.author_id) == ("<b>Any</b> news?", actor.user.pk)
    active.refresh_from_db()
    assert active.status == Status.ACTIVE
    assert _last_audit(active).payload == {
        "from": Status.ACTIVE,
        "to": Status.ACTIVE,
        "commentId": str(comment.pk),
    }
    event = _last_event(active)
    assert (event.kind, event.detail, event.actor_user_id) == (
        EventKind.COMMENTED,
        {"commentId": str(comment.pk)},
        actor.user.pk,
    )


@pytest.mark.parametrize("who", ["stranger", "staff", "token", "system"])
def test_nobody_else_comments(who, active, lead, assigner, outsider, staff):
    actor = _strangers(assigner, outsider, staff, mover=lead)[who]
    before = _rows()
    with pytest.raises(NotPermitted):
        services.commitment_comment(actor=actor, commitment_id=active.pk, body="Hello")
    assert _rows() == before


@pytest.mark.parametrize("body", ["", "   \n\t ", "\u200b", "x" * (COMMENT_MAX + 1)])
def test_a_blank_or_too_long_comment_is_refused(body, active, knight):
    before = _rows()
    with pytest.raises(CommentInvalid):
        services.commitment_comment(actor=knight, commitment_id=active.pk, body=body)
    assert _rows() == before


def test_a_draft_takes_no_comment(assigner, assignee, lead):
    draft = commitment_in(Status.DRAFT, assigner, assignee)
    with pytest.raises(InvalidTransition):
        services.commitment_comment(actor=lead, commitment_id=draft.pk, body="Hello")


# --- withdraw ---------------------------------------------------------------------------


@pytest.mark.parametrize("status", [Status.PENDING_HANDSHAKE, Status.ACTIVE, Status.REFUSED])
def test_the_assigner_withdraws_and_the_assignee_is_told(status, assigner, assignee, lead):
    c = commitment_in(status, assigner, assignee)
    result = services.commitment_withdraw(actor=lead, commitment_id=c.pk, reason=" Dropped it ")
    c.refresh_from_db()
    assert (result.previous_status, c.status) == (status, Status.WITHDRAWN)
    assert c.withdrawn_at == c.updated_at
    assert _last_audit(c).payload == {
        "from": status,
        "to": Status.WITHDRAWN,
        "reason": "Dropped it",
    }
    event = _last_event(c)
    assert (event.kind, event.previous_status, event.new_status) == (
        EventKind.WITHDRAWN,
        status,
        Status.WITHDRAWN,
    )
    assert event.detail == {"reason": "Dropped it"}  # for the assignee's nudge


@pytest.mark.parametrize("who", ["other person", "stranger", "staff", "token", "system"])
def test_only_the_assigner_withdraws(who, active, knight, assigner, outsider, staff):
    actor = _strangers(assigner, outsider, staff, mover=knight)[who]
    before = _rows()
    with pytest.raises(NotPermitted):
        services.commitment_withdraw(actor=actor, commitment_id=active.pk)
    assert _rows() == before


def test_a_request_to_an_address_without_an_account_may_be_withdrawn(lead):
    c = services.commitment_ask(
        actor=lead,
        assignee_email="nobody-yet@example.com",
        description="Join us",
        deadline=None,
        send=True,
    )
    services.commitment_withdraw(actor=lead, commitment_id=c.pk)
    c.refresh_from_db()
    assert (c.status, c.assignee_id, c.invitation.email) == (
        Status.WITHDRAWN,
        None,
        "nobody-yet@example.com",
    )


# --- reassign ---------------------------------------------------------------------------


@pytest.mark.parametrize("status", [Status.PENDING_HANDSHAKE, Status.ACTIVE, Status.REFUSED])
def test_reassigning_asks_the_new_person_for_a_fresh_handshake(
    status, assigner, assignee, lead, make_user
):
    squire = make_user("squire@example.com")
    c = commitment_in(status, assigner, assignee)
    result = services.commitment_reassign(
        actor=lead, commitment_id=c.pk, assignee_email=" Squire@Example.com ", note="Knight is away"
    )
    c.refresh_from_db()
    assert (result.previous_status, c.status, c.assignee, c.invitation) == (
        status,
        Status.PENDING_HANDSHAKE,
        squire,
        None,
    )
    assert (c.activated_at, c.refused_at, c.terms_version) == (None, None, 2)
    detail = {
        "previousAssigneeId": str(assignee.pk),
        "previousInvitationId": None,
        "assigneeId": str(squire.pk),
        "invitationId": None,
    }
    event = _last_event(c)
    assert (event.kind, event.detail) == (EventKind.REASSIGNED, detail)
    assert (event.previous_status, event.new_status) == (status, Status.PENDING_HANDSHAKE)
    audit = _last_audit(c)
    assert audit.payload == {
        "from": status,
        "to": Status.PENDING_HANDSHAKE,
        **detail,
        "termsVersion": 2,
        "assigneeEmail": "squire@example.com",
        "assigneeName": squire.name,
        "note": "Knight is away",
    }
    # The new person answers; the previous one no longer can.
    with pytest.raises(NotPermitted):
        services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=c.pk)
    services.commitment_accept(actor=Actor.for_user(squire), commitment_id=c.pk, terms_version=2)


def test_reassigning_to_an_address_without_an_account_invites_it(
    assigner, assignee, lead, settings
):
    c = services.commitment_create_pending(
        actor=lead,
        assigner=assigner,
        assignee=assignee,
        description="Fix OPS-7",
        deadline=None,
        external_system="jira",
        external_id="OPS-7",
    )
    services.commitment_reassign(actor=lead, commitment_id=c.pk, assignee_email="new@example.com")
    c.refresh_from_db()
    invitation = Invitation.objects.get(email="new@example.com")
    assert (c.status, c.assignee, c.invitation) == (Status.PENDING_HANDSHAKE, None, invitation)
    # The external reference stays: a later sync still finds it.
    assert (c.external_system, c.external_id) == ("jira", "OPS-7")
    event = _last_event(c)
    # Still `reassigned` (not `invited`): no assignee and the invitation set
    # tell the workers to mail the invitation.
    assert event.kind == EventKind.REASSIGNED
    assert event.detail == {
        "previousAssigneeId": str(assignee.pk),
        "previousInvitationId": None,
        "assigneeId": None,
        "invitationId": str(invitation.pk),
    }


def test_reassigning_from_one_invited_address_to_another(lead, assignee):
    c = services.commitment_ask(
        actor=lead, assignee_email="first@example.com", description="x", deadline=None, send=True
    )
    first = c.invitation
    services.commitment_reassign(
        actor=lead, commitment_id=c.pk, assignee_email="knight@example.com"
    )
    c.refresh_from_db()
    assert (c.assignee, c.invitation) == (assignee, None)
    assert _last_event(c).detail["previousInvitationId"] == str(first.pk)


def test_reassigning_counts_against_the_daily_invitation_limit(active, lead, settings):
    settings.INVITATIONS_PER_DAY = 0
    before = _rows()
    with pytest.raises(AddressNotAskable):
        services.commitment_reassign(
            actor=lead, commitment_id=active.pk, assignee_email="new@example.com"
        )
    assert _rows() == before


def test_reassigning_to_a_closed_account_is_refused(active, lead, make_user):
    make_user("gone@example.com", is_active=False)
    with pytest.raises(AddressNotAskable, match="closed account"):
        services.commitment_reassign(
            actor=lead, commitment_id=active.pk, assignee_email="gone@example.com"
        )


@pytest.mark.parametrize("email", ["knight@example.com", "LEAD@example.com", "not an address", ""])
def test_reassigning_to_the_same_person_the_assigner_or_nobody_is_refused(email, active, lead):
    before = _rows()
    with pytest.raises(ReassignInvalid):
        services.commitment_reassign(actor=lead, commitment_id=active.pk, assignee_email=email)
    assert _rows() == before


@pytest.mark.parametrize("email", ["outsider@example.com", "not an address"])
@pytest.mark.parametrize("who", ["other person", "stranger", "staff", "token", "system"])
def test_only_the_assigner_reassigns(who, email, active, knight, assigner, outsider, staff):
    actor = _strangers(assigner, outsider, staff, mover=knight)[who]
    before = _rows()
    with pytest.raises(NotPermitted):  # whatever the address: who asks is checked first
        services.commitment_reassign(actor=actor, commitment_id=active.pk, assignee_email=email)
    assert _rows() == before


@pytest.mark.parametrize("status", [Status.DRAFT, Status.COMPLETED, Status.WITHDRAWN])
def test_an_ended_or_unsent_commitment_is_neither_withdrawn_nor_reassigned(
    status, assigner, assignee, lead, outsider
):
    c = commitment_in(status, assigner, assignee)
    before = _rows()
    for move in (
        lambda: services.commitment_withdraw(actor=lead, commitment_id=c.pk),
        lambda: services.commitment_reassign(
            actor=lead, commitment_id=c.pk, assignee_email="outsider@example.com"
        ),
    ):
        with pytest.raises(InvalidTransition) as excinfo:
            move()
        assert excinfo.value.current_status == status
    assert _rows() == before


def test_every_error_of_the_conversation_is_a_commitment_error():
    for error in (
        ProposalNotOpen,
        ProposalAlreadyOpen,
        ProposalInvalid,
        CommentInvalid,
        ReassignInvalid,
    ):
        assert issubclass(error, CommitmentError)
