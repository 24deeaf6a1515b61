"""Reads of commitments."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db.models import (
    BooleanField,
    Count,
    ExpressionWrapper,
    F,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    UUIDField,
)
from django.utils import timezone

from audit.models import AuditAction, AuditEvent
from audit.services import Actor
from commitments.links import deep_link
from commitments.machine import MOVES, may_make
from commitments.models import (
    AccordVisit,
    Comment,
    Commitment,
    LinkTemplate,
    OutboxEvent,
    Proposal,
    ProposalState,
    Status,
    overdue,
)

if TYPE_CHECKING:
    from accounts.models import User

FLOW_SCORE_WINDOW = dt.timedelta(days=90)
# The moves the commitment page offers as buttons.
PAGE_MOVES = ("send", "accept", "decline", "complete")


def _for_pages() -> QuerySet[Commitment]:
    """Commitments with both people loaded and `is_overdue` annotated."""
    is_overdue = ExpressionWrapper(overdue(timezone.now()), output_field=BooleanField())
    return Commitment.objects.select_related("assigner", "assignee", "invitation").annotate(
        is_overdue=is_overdue
    )


def commitment_list_for_assignee(*, user: User) -> QuerySet[Commitment]:
    """The Accord: what others asked of this person, drafts excluded."""
    return _for_pages().filter(assignee=user).exclude(status=Status.DRAFT)


def commitment_list_for_assigner(*, user: User) -> QuerySet[Commitment]:
    return _for_pages().filter(assigner=user)


def commitment_list_with_status(*, status: Status) -> QuerySet[Commitment]:
    """Every commitment in `status`, for another app's read to narrow (the
    reminders due, `notifications.selectors.reminders_due`)."""
    return Commitment.objects.filter(status=status)


# --- the Accord -------------------------------------------------------------------


def accord_waiting_count(*, user: User) -> int:
    """How many requests wait for `user`'s handshake: one COUNT."""
    return Commitment.objects.filter(assignee=user, status=Status.PENDING_HANDSHAKE).count()


def accord_last_seen(*, user: User) -> dt.datetime | None:
    return AccordVisit.objects.filter(user=user).values_list("seen_at", flat=True).first()


def accord_section(
    *, user: User, statuses: Iterable[str], person: uuid.UUID | None = None, text: str = ""
) -> QuerySet[Commitment]:
    """The Accord's rows in `statuses`, filtered by who asked (a user id) and
    by words of the description. Open items are sorted by deadline (none
    last), closed ones by their last change. Each row carries `past_deadline`
    (open, waiting or active, with its deadline gone by) and `last_actor_id`
    (who made the latest move, from the outbox, in the same query)."""
    now = timezone.now()
    past_deadline = ExpressionWrapper(
        Q(status__in=[Status.PENDING_HANDSHAKE, Status.ACTIVE], deadline__lt=now),
        output_field=BooleanField(),
    )
    rows = (
        commitment_list_for_assignee(user=user)
        .filter(status__in=statuses)
        .annotate(
            past_deadline=past_deadline,
            last_actor_id=Subquery(
                OutboxEvent.objects.filter(commitment=OuterRef("pk"))
                .order_by("-id")
                .values("actor_user_id")[:1],
                output_field=UUIDField(),  # converted on SQLite too
            ),
        )
    )
    if person:
        rows = rows.filter(assigner_id=person)
    if text:
        rows = rows.filter(description__icontains=text)
    if set(statuses) & {Status.PENDING_HANDSHAKE, Status.ACTIVE}:
        return rows.order_by(F("deadline").asc(nulls_last=True), "-created_at", "pk")
    return rows.order_by("-updated_at", "pk")


def accord_people(*, user: User) -> QuerySet[User]:
    """Who has asked `user` something (for the Accord's filter by person)."""
    asked_by = commitment_list_for_assignee(user=user).values("assigner_id")
    return get_user_model().objects.filter(pk__in=asked_by).order_by("display_name", "email")


@dataclass(frozen=True)
class Collaborator:
    name: str
    email: str


def collaborators_for(*, user: User) -> list[Collaborator]:
    """The people the user has a commitment with, either way (excluding the
    user): the suggestions of the New commitment page and the only addresses
    capture may put on a draft. Someone else's draft naming the user does not
    count (the Accord never shows drafts). One query."""
    assignee_ids = commitment_list_for_assigner(user=user).values("assignee_id")
    assigner_ids = commitment_list_for_assignee(user=user).values("assigner_id")
    people = (
        get_user_model()
        .objects.filter(Q(pk__in=assignee_ids) | Q(pk__in=assigner_ids))
        .exclude(pk=user.pk)
    )
    return sorted(
        (Collaborator(name=person.name, email=person.email) for person in people),
        key=lambda c: (c.name.casefold(), c.email),
    )


def commitment_get_visible(*, user: User, commitment_id: uuid.UUID) -> Commitment | None:
    """A commitment its assigner or assignee may see; drafts only by the assigner."""
    return (
        _for_pages()
        .filter(pk=commitment_id)
        .filter(Q(assigner=user) | (Q(assignee=user) & ~Q(status=Status.DRAFT)))
        .first()
    )


def commitment_timeline(*, commitment: Commitment) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.for_object(commitment).select_related("user")


def commitment_decline_reason(*, commitment: Commitment) -> str:
    """The reason the assignee gave with their latest decline ('' if none)."""
    declined = (
        AuditEvent.objects.for_object(commitment)
        .filter(action=AuditAction.DECLINED)
        .order_by("-occurred_at", "-pk")
        .values_list("payload", flat=True)
        .first()
    )
    reason: str = (declined or {}).get("reason", "")  # the audit row's JSON payload
    return reason


def link_template_list(*, owner: User) -> QuerySet[LinkTemplate]:
    return LinkTemplate.objects.filter(owner=owner).order_by("system")


def external_systems_seen_by(*, user: User, limit: int = 50) -> list[str]:
    """The `externalSystem`s of commitments the person asked or was asked
    (drafts have none): suggestions for the deep-link form. One query."""
    rows = (
        Commitment.objects.filter(Q(assigner=user) | Q(assignee=user))
        .filter(external_system__isnull=False)
        .order_by("external_system")
        .values_list("external_system", flat=True)
        .distinct()
    )
    return [system for system in rows[:limit] if system is not None]  # filtered above


def commitment_deep_link(*, viewer: User, commitment: Commitment) -> str | None:
    """The link to the commitment's external reference in its system: through
    the viewer's own template for that system (they know where they look
    things up), else the assigner's (who connected that system); None when
    neither has one, or the commitment has no external reference. One query.
    A commitment that carries its own link (a tracker connection's issue URL,
    `link_url`) is linked there, with no query."""
    if commitment.link_url:
        return commitment.link_url
    if not commitment.has_external_ref:
        return None
    owners = {viewer.pk, commitment.assigner_id}
    templates = {
        owner_id: template
        for owner_id, template in LinkTemplate.objects.filter(
            system=commitment.external_system, owner_id__in=owners
        ).values_list("owner_id", "template")
    }
    template = templates.get(viewer.pk) or templates.get(commitment.assigner_id)
    if template is None or commitment.external_id is None:  # has_external_ref: it is set
        return None
    return deep_link(template, commitment.external_id)


# Audit actions that change the terms, and where their diff sits in the payload.
_TERMS_DIFFS: dict[str, str | None] = {
    AuditAction.DRAFT_EDITED: None,
    AuditAction.RENEGOTIATED: "changes",
    AuditAction.PROPOSAL_ACCEPTED: "changes",
    AuditAction.EXTENSION_GRANTED: "changes",
}


def commitment_terms_changes_since(*, commitment: Commitment, terms_version: int) -> dict[str, Any]:
    """What changed in the terms after version `terms_version`, from the diffs
    the audit trail keeps of every draft edit, renegotiation, accepted
    counter-proposal and granted extension, the latest
    value of each winning: {"description": str, "deadline": datetime | None},
    with only the terms that changed."""
    changed: dict[str, Any] = {}
    events = commitment_timeline(commitment=commitment).filter(action__in=_TERMS_DIFFS)
    for event in events:
        if event.payload.get("termsVersion", 0) <= terms_version:
            continue
        key = _TERMS_DIFFS[event.action]
        diff = event.payload.get(key, {}) if key else event.payload
        for term in ("description", "deadline"):
            if term in diff:
                changed[term] = diff[term]
    if changed.get("deadline"):
        changed["deadline"] = dt.datetime.fromisoformat(changed["deadline"])
    return changed


@dataclass(frozen=True)
class FlowScore:
    """The Flow Score and its parts: `kept` of `counted` (completed plus
    overdue), of which `late` were completed after their deadline and
    `overdue` are Active past it. `score` is None when nothing counts."""

    kept: int
    completed: int
    overdue: int

    @property
    def counted(self) -> int:
        return self.completed + self.overdue

    @property
    def late(self) -> int:
        return self.completed - self.kept

    @property
    def score(self) -> int | None:
        if self.counted == 0:
            return None
        return round(100 * self.kept / self.counted)


def flow_score_parts(*, user: User, now: dt.datetime | None = None) -> FlowScore:
    """100 x kept / (completed + overdue) over the last 90 days, as assignee,
    with its parts.

    kept: completed by the deadline, or with no deadline; overdue: Active past
    its deadline. The deadline is the one both agreed last (the handshake's,
    an accepted counter-proposal's, or more time granted: nothing else
    changes it once accepted). Withdrawn commitments never count (neither
    completed nor overdue). One query.
    """
    now = now or timezone.now()
    since = now - FLOW_SCORE_WINDOW
    completed = Q(status=Status.COMPLETED, completed_at__gte=since)
    kept = completed & (Q(deadline__isnull=True) | Q(completed_at__lte=F("deadline")))
    late = overdue(now) & Q(deadline__gte=since)
    totals = Commitment.objects.filter(assignee=user).aggregate(
        kept=Count("pk", filter=kept),
        completed=Count("pk", filter=completed),
        overdue=Count("pk", filter=late),
    )
    return FlowScore(**totals)


def flow_score(*, user: User, now: dt.datetime | None = None) -> int | None:
    """The Flow Score alone (None: nothing to score). One query."""
    return flow_score_parts(user=user, now=now).score


def _allowed_now(moves: Iterable[str], *, user: User, commitment: Commitment) -> list[str]:
    """Those of `moves` the table lets `user` make on `commitment` in its status."""
    actor = Actor.for_user(user)
    return [
        move
        for move in moves
        if commitment.status in MOVES[move].from_statuses
        and may_make(MOVES[move], actor=actor, commitment=commitment)
    ]


def commitment_actions_for(*, user: User, commitment: Commitment) -> set[str]:
    """The moves `user` may make on `commitment` now: a subset of
    {"send", "accept", "decline", "complete"}."""
    return set(_allowed_now(PAGE_MOVES, user=user, commitment=commitment))


def commitment_terms_move_for(*, user: User, commitment: Commitment) -> str | None:
    """How `user` may change the description and deadline now: "edit_draft"
    (a plain edit of a Draft), "renegotiate" (asks for the handshake again),
    or None."""
    allowed = _allowed_now(("edit_draft", "renegotiate"), user=user, commitment=commitment)
    return allowed[0] if allowed else None


def commitments_for_external_item(
    *, assigner: User, external_system: str, external_id: str, further_prefix: str
) -> list[Commitment]:
    """The assigner's commitments about one external item: the one whose
    externalId is `external_id`, and those whose externalId starts with
    `further_prefix` (a tracker issue's further assignees, `trackers.services`
    says how both are made from the issue's key). Oldest first, with their
    assignee; one query."""
    return list(
        Commitment.objects.filter(assigner=assigner, external_system=external_system)
        .filter(Q(external_id=external_id) | Q(external_id__startswith=further_prefix))
        .select_related("assignee")
        .order_by("created_at")
    )


# --- the conversation (issue 26) --------------------------------------------------------


def _proposals() -> QuerySet[Proposal]:
    return Proposal.objects.select_related("proposed_by", "answered_by")


def proposal_open_for(*, commitment: Commitment) -> Proposal | None:
    """The commitment's open proposal (a counter-proposal waiting for the
    assigner, or a request for more time), with who made it; None when
    there is none. One query."""
    return _proposals().filter(commitment=commitment, state=ProposalState.OPEN).first()


def proposals_open_for(*, commitment_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, Proposal]:
    """The open proposal of each of many commitments, by commitment id (those
    without one are absent): one query, whatever their number."""
    rows = _proposals().filter(commitment_id__in=list(commitment_ids), state=ProposalState.OPEN)
    return {proposal.commitment_id: proposal for proposal in rows}


def with_open_proposals(rows: QuerySet[Commitment]) -> QuerySet[Commitment]:
    """`rows`, each with `open_proposals`: a list of its open proposal (at
    most one, with who made it; empty when none), all fetched in one more
    query for the whole page (a prefetch, no query per row)."""
    return rows.prefetch_related(
        Prefetch(
            "proposals",
            queryset=_proposals().filter(state=ProposalState.OPEN),
            to_attr="open_proposals",
        )
    )


def proposals_waiting_for(*, user: User, limit: int | None = None) -> list[Proposal]:
    """The open proposals that wait for `user`'s answer (they asked; the
    assignee proposed other terms or asked for more time), the oldest first,
    with their commitment and both people. One query."""
    rows = (
        Proposal.objects.filter(state=ProposalState.OPEN, commitment__assigner=user)
        .select_related("proposed_by", "commitment", "commitment__assignee")
        .order_by("created_at", "pk")
    )
    return list(rows[:limit] if limit is not None else rows)


# The audit rows the conversation shows as its own items (a proposal, its
# answer, a comment), not as moves.
_SPOKEN = frozenset(
    {
        AuditAction.PROPOSED,
        AuditAction.EXTENSION_REQUESTED,
        AuditAction.PROPOSAL_ACCEPTED,
        AuditAction.PROPOSAL_DECLINED,
        AuditAction.EXTENSION_GRANTED,
        AuditAction.EXTENSION_DECLINED,
        AuditAction.COMMENTED,
    }
)


@dataclass(frozen=True)
class ConversationItem:
    """One item of a commitment's conversation, for a template.

    kind: "move" (`event`: the audit row of a move, such as created,
    accepted, renegotiated, withdrawn, reassigned), "proposal" (`proposal`
    made: a counter-proposal or a request for more time, its `state` saying
    whether it waits, was answered or superseded), "answer" (`proposal`
    accepted or declined, by `proposal.answered_by`, with its
    `answer_note`), or "comment" (`comment`). `at`: when; `by`: who (None for
    a move by a token or the system: `event` says which)."""

    kind: str
    at: dt.datetime
    by: User | None
    event: AuditEvent | None = None
    proposal: Proposal | None = None
    comment: Comment | None = None


def commitment_conversation(*, commitment: Commitment) -> list[ConversationItem]:
    """The commitment's conversation in time order (the oldest first): its
    moves, the proposals made and their answers, and the comments. Three
    queries, whatever its length."""
    items: list[ConversationItem] = [
        ConversationItem(kind="move", at=event.occurred_at, by=event.user, event=event)
        for event in commitment_timeline(commitment=commitment).exclude(action__in=_SPOKEN)
    ]
    for proposal in _proposals().filter(commitment=commitment):
        items.append(
            ConversationItem(
                kind="proposal", at=proposal.created_at, by=proposal.proposed_by, proposal=proposal
            )
        )
        answered = proposal.state in (ProposalState.ACCEPTED, ProposalState.DECLINED)
        if answered and proposal.answered_at is not None:
            items.append(
                ConversationItem(
                    kind="answer",
                    at=proposal.answered_at,
                    by=proposal.answered_by,
                    proposal=proposal,
                )
            )
    for comment in Comment.objects.filter(commitment=commitment).select_related("author"):
        items.append(
            ConversationItem(
                kind="comment", at=comment.created_at, by=comment.author, comment=comment
            )
        )
    # Stable: what happened at the same instant keeps the order above.
    return sorted(items, key=lambda item: item.at)


@dataclass(frozen=True)
class DeadlineChange:
    """A deadline both people agreed, or that was asked: `how` is "asked"
    (the deadline of the request as sent), "renegotiated" (the assigner
    asked again with another), "proposal_accepted" (the assignee's
    counter-proposal, accepted) or "extension_granted" (more time granted);
    `deadline` None: no deadline. `previous`: the one it replaced (None for
    "asked")."""

    how: str
    at: dt.datetime
    deadline: dt.datetime | None
    previous: dt.datetime | None
    by: User | None


_DEADLINE_MOVES: dict[str, str] = {
    AuditAction.RENEGOTIATED: "renegotiated",
    AuditAction.PROPOSAL_ACCEPTED: "proposal_accepted",
    AuditAction.EXTENSION_GRANTED: "extension_granted",
}
_ASKED = (AuditAction.CREATED, AuditAction.SENT_FOR_HANDSHAKE)


def _when(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value else None


def commitment_deadline_history(*, commitment: Commitment) -> list[DeadlineChange]:
    """The deadlines of the commitment over time, the oldest first: the one
    asked when it was sent (draft edits before are not shown), then each
    renegotiation, accepted counter-proposal and granted extension that
    changed it. Empty for a draft. From the diffs its audit trail keeps; one
    query."""
    events = list(
        commitment_timeline(commitment=commitment).filter(action__in=[*_ASKED, *_TERMS_DIFFS])
    )
    # Walk back from the deadline now: before each change, its `previous`.
    after: dict[Any, dt.datetime | None] = {}
    deadline = commitment.deadline
    for event in reversed(events):
        after[event.pk] = deadline
        key = _TERMS_DIFFS.get(event.action)
        diff = (event.payload.get(key, {}) if key else event.payload) or {}
        if event.action in _TERMS_DIFFS and "deadline" in diff:
            deadline = _when((event.payload.get("previous") or {}).get("deadline"))
    history: list[DeadlineChange] = []
    for event in events:
        if event.action in _ASKED:
            if not history:
                history.append(
                    DeadlineChange("asked", event.occurred_at, after[event.pk], None, event.user)
                )
            continue
        how = _DEADLINE_MOVES.get(event.action)
        changes = event.payload.get("changes") or {}
        if how is None or "deadline" not in changes or not history:
            continue
        history.append(
            DeadlineChange(
                how,
                event.occurred_at,
                after[event.pk],
                _when((event.payload.get("previous") or {}).get("deadline")),
                event.user,
            )
        )
    return history
