"""Reads of commitments."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    F,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    UUIDField,
)
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from audit.models import ActorKind, AuditAction, AuditEvent
from audit.services import Actor
from commitments.links import deep_link
from commitments.machine import MOVES, may_make
from commitments.models import (
    AccordVisit,
    Comment,
    Commitment,
    Invitation,
    LinkTemplate,
    OutboxEvent,
    Proposal,
    ProposalKind,
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


def _answer_waiting(user: User) -> Q:
    """What `user` asked that has an open proposal waiting for their answer
    (a counter-proposal on a request waiting for its handshake, or a request
    for more time on an Active commitment)."""
    open_one = Proposal.objects.filter(commitment=OuterRef("pk"), state=ProposalState.OPEN)
    return Q(assigner=user, status__in=[Status.PENDING_HANDSHAKE, Status.ACTIVE]) & Q(
        Exists(open_one)
    )


def accord_waiting_count(*, user: User) -> int:
    """How many things wait for `user` (the count beside "Accord"): requests
    waiting for their handshake, and proposals or requests for more time
    waiting for their answer (one open proposal a commitment at most). One
    COUNT."""
    handshakes = Q(assignee=user, status=Status.PENDING_HANDSHAKE)
    return Commitment.objects.filter(handshakes | _answer_waiting(user)).count()


def accord_counts(*, user: User, person: uuid.UUID | None = None, text: str = "") -> dict[str, int]:
    """How many rows each part of the Accord holds, filtered as its rows
    (`accord_section`, `answers_waiting_for`): by
    status (each status but Draft) of what others asked of `user`, and
    "answers": the proposals waiting for `user`'s answer (one open proposal
    a commitment at most). One query, whatever the number of commitments."""
    owed = Q(assignee=user) & ~Q(status=Status.DRAFT)
    answers = _answer_waiting(user)
    if person:
        owed &= Q(assigner_id=person)
        answers &= Q(assignee_id=person)
    rows = Commitment.objects.filter(owed | answers)
    if text:
        rows = rows.filter(description__icontains=text)
    counts: dict[str, Any] = {
        status.value: Count("pk", filter=owed & Q(status=status))
        for status in Status
        if status != Status.DRAFT
    }
    counts["answers"] = Count("pk", filter=answers)
    return rows.aggregate(**counts)


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


# The most people the Accord's filter by person offers.
ACCORD_PEOPLE_MAX = 50


def accord_people(
    *, user: User, including: uuid.UUID | None = None, limit: int = ACCORD_PEOPLE_MAX
) -> QuerySet[User]:
    """Who has asked `user` something, for the Accord's filter by person: the
    `limit` who asked most recently, and `including` (the person filtered
    by) when they asked anything, by name. Not everyone who ever asked: for
    a person asked by thousands the list was most of the page and grew with
    every request (benchmarks/scale.py); a filter is for the people of the
    moment. One query."""
    asked = Commitment.objects.filter(assignee=user).exclude(status=Status.DRAFT)
    recent = (
        asked.values("assigner_id")
        .annotate(latest=Max("created_at"))
        .order_by("-latest", "assigner_id")
        .values("assigner_id")[:limit]
    )
    chosen = Q(pk__in=recent)
    if including is not None:
        chosen |= Q(pk=including, pk__in=asked.values("assigner_id"))
    return get_user_model().objects.filter(chosen).order_by("display_name", "email")


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
    return commitment_deep_links(viewer=viewer, commitments=[commitment])[commitment.pk]


class Linkable(Protocol):
    """What a deep link is made from: a Commitment, or a CommitmentRead."""

    @property
    def pk(self) -> Any: ...
    @property
    def link_url(self) -> str | None: ...
    @property
    def external_system(self) -> str | None: ...
    @property
    def external_id(self) -> str | None: ...
    @property
    def assigner_id(self) -> Any: ...


def commitment_deep_links(
    *, viewer: User, commitments: Sequence[Linkable]
) -> dict[uuid.UUID, str | None]:
    """`commitment_deep_link` of each of `commitments`, by id, in one query
    at most (none when no commitment needs a template): the read API's list."""
    links: dict[uuid.UUID, str | None] = {}
    wanting: list[Linkable] = []
    for commitment in commitments:
        if commitment.link_url:
            links[commitment.pk] = commitment.link_url
        elif commitment.external_system is not None:
            wanting.append(commitment)
        else:
            links[commitment.pk] = None
    if not wanting:
        return links
    owners = {viewer.pk} | {commitment.assigner_id for commitment in wanting}
    systems = {commitment.external_system for commitment in wanting}
    templates: dict[tuple[Any, str | None], str] = {
        (owner_id, system): template
        for owner_id, system, template in LinkTemplate.objects.filter(
            system__in=systems, owner_id__in=owners
        ).values_list("owner_id", "system", "template")
    }
    for commitment in wanting:
        system = commitment.external_system
        template = templates.get((viewer.pk, system)) or templates.get(
            (commitment.assigner_id, system)
        )
        external_id = commitment.external_id
        links[commitment.pk] = (
            deep_link(template, external_id) if template and external_id is not None else None
        )
    return links


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


# --- the read API (GET /api/v1/commitments, integrations.api) ------------------

READ_ROLES = ("assigner", "assignee")


def public_actor_kind(actor_kind: str) -> str:
    """An actor kind as the contract names it: `user`, `api_token` or
    `system`. A tracker connection (the owner's credential on the inbound
    API, like a token) reads as `api_token`: the outbound webhooks'
    envelope and the read API's history say it alike (docs/trackers.md)."""
    return ActorKind.API_TOKEN.value if actor_kind == ActorKind.TRACKER else actor_kind


@dataclass(frozen=True)
class StatusChange:
    """One status change of a commitment, from its audit trail (the facts
    its page's timeline shows): the status it reached, the one it left (None
    for the creation), when, and the kind of actor (`public_actor_kind`)."""

    status: str
    previous_status: str | None
    at: dt.datetime
    actor_kind: str


def commitment_history(*, commitment: Commitment) -> list[StatusChange]:
    """The commitment's status changes, oldest first: its creation and every
    move that changed its status. An audit row of a move carries `from` and
    `to` (commitments.services._record); a row whose status stayed (a draft
    edit, a renegotiation still waiting for the handshake, a tracker's
    record) is no status change. One query."""
    rows = (
        AuditEvent.objects.for_object(commitment)
        .order_by("occurred_at", "id")
        .values_list("occurred_at", "actor_kind", "payload")
    )
    return [change for row in rows if (change := _change(*row))]


@dataclass(frozen=True)
class CommitmentRead:
    """A commitment as the read API gives it: the stored facts, both
    addresses (the assignee's, or the invited address), its deep link for
    the reader, and, in a single read, its status changes."""

    pk: uuid.UUID
    status: str
    description: str
    deadline: dt.datetime | None
    external_system: str | None
    external_id: str | None
    assigner_id: Any
    assigner_email: str
    assignee_email: str
    created_at: dt.datetime
    updated_at: dt.datetime
    link_url: str | None
    link: str | None = None
    history: list[StatusChange] | None = None


def _moment(value: Any) -> dt.datetime:
    """A timestamp read by hand: SQLite's are naive UTC (or text)."""
    moment = parse_datetime(value) if isinstance(value, str) else value
    assert isinstance(moment, dt.datetime)  # the database's own format
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _change(occurred_at: Any, actor_kind: str, payload: Any) -> StatusChange | None:
    """The status change an audit row of a move records, or None (see
    commitment_history)."""
    if isinstance(payload, str):
        payload = json.loads(payload)
    to = (payload or {}).get("to")
    previous = (payload or {}).get("from")
    if to is None or to == previous:
        return None
    return StatusChange(
        status=to,
        previous_status=previous,
        at=_moment(occurred_at),
        actor_kind=public_actor_kind(actor_kind),
    )


@cache
def _reader_sql() -> str:
    """The single read, written out: the commitment, its people's addresses,
    the reader's and the assigner's link templates for its system, and its
    audit rows, in one statement (a row per audit row). It runs on every
    GET /api/v1/commitments/{id}, where four ORM queries cost more than the
    rest of the call together (docs/benchmarks.md); the same answers as
    `commitment_get_visible`, `commitment_deep_link` and `commitment_history`,
    which tests/integrations/test_read_api.py holds it to. Standard SQL, the
    same on PostgreSQL and SQLite."""
    quote = connection.ops.quote_name
    c, u = Commitment._meta, get_user_model()._meta
    i, t, e = Invitation._meta, LinkTemplate._meta, AuditEvent._meta

    def template_of(owner: str) -> str:
        return (
            f"(SELECT t.{quote('template')} FROM {quote(t.db_table)} t"  # noqa: S608
            f" WHERE t.{quote('owner_id')} = {owner}"
            f" AND t.{quote('system')} = c.{quote('external_system')})"
        )

    columns = ", ".join(
        f"c.{quote(name)}"
        for name in (
            "id",
            "status",
            "description",
            "deadline",
            "external_system",
            "external_id",
            "assigner_id",
            "created_at",
            "updated_at",
            "link_url",
        )
    )
    # Only names from the models' metadata and placeholders: no input.
    return (
        f"SELECT {columns}, a.{quote('email')}, b.{quote('email')}, i.{quote('email')},"  # noqa: S608
        f" {template_of('%s')}, {template_of('c.' + quote('assigner_id'))},"
        f" e.{quote('occurred_at')}, e.{quote('actor_kind')}, e.{quote('payload')}"
        f" FROM {quote(c.db_table)} c"
        f" INNER JOIN {quote(u.db_table)} a ON a.{quote(u.pk.column)} = c.{quote('assigner_id')}"
        f" LEFT JOIN {quote(u.db_table)} b ON b.{quote(u.pk.column)} = c.{quote('assignee_id')}"
        f" LEFT JOIN {quote(i.db_table)} i ON i.{quote('id')} = c.{quote('invitation_id')}"
        f" LEFT JOIN {quote(e.db_table)} e ON e.{quote('subject_type_id')} = %s"
        f" AND e.{quote('subject_id')} = c.{quote('id')}"
        f" WHERE c.{quote('id')} = %s AND (c.{quote('assigner_id')} = %s"
        f" OR (c.{quote('assignee_id')} = %s AND c.{quote('status')} <> %s))"
        f" ORDER BY e.{quote('occurred_at')}, e.{quote('id')}"
    )


def commitment_read(*, user: User, commitment_id: uuid.UUID) -> CommitmentRead | None:
    """One commitment `user` asked or was asked (drafts only to the
    assigner, as on the pages), with its deep link for `user` and its
    history; None for anyone else's or an unknown id. One query."""
    field = Commitment._meta.pk
    assert field is not None
    commitment_key = field.get_db_prep_value(commitment_id, connection)
    user_id = get_user_model()._meta.pk.get_db_prep_value(user.pk, connection)
    subject_type = ContentType.objects.get_for_model(Commitment).pk  # cached after the first
    with connection.cursor() as cursor:
        cursor.execute(
            _reader_sql(),
            [user_id, subject_type, commitment_key, user_id, user_id, Status.DRAFT.value],
        )
        rows = cursor.fetchall()
    if not rows:
        return None
    (pk, status, description, deadline, system, external_id, assigner_id, created, updated,
     link_url, assigner_email, assignee_email, invited, mine, assigners) = rows[0][:15]  # fmt: skip
    template = mine or assigners
    if link_url:
        link = link_url
    elif template and external_id is not None:
        link = deep_link(template, external_id)
    else:
        link = None
    history = [
        change
        for occurred_at, actor_kind, payload in (row[15:] for row in rows)
        if occurred_at is not None and (change := _change(occurred_at, actor_kind, payload))
    ]
    return CommitmentRead(
        pk=pk if isinstance(pk, uuid.UUID) else uuid.UUID(str(pk)),
        status=status,
        description=description,
        deadline=_moment(deadline) if deadline is not None else None,
        external_system=system,
        external_id=external_id,
        assigner_id=assigner_id,
        assigner_email=assigner_email,
        assignee_email=assignee_email or invited,
        created_at=_moment(created),
        updated_at=_moment(updated),
        link_url=link_url,
        link=link,
        history=history,
    )


_LIST_COLUMNS = (
    "id",
    "status",
    "description",
    "deadline",
    "external_system",
    "external_id",
    "assigner_id",
    "assigner__email",
    "assignee__email",
    "invitation__email",
    "created_at",
    "updated_at",
    "link_url",
)


@dataclass(frozen=True)
class CommitmentPage:
    """A page of the read API's list: its rows, newest change first, and
    whether more follow (then the last row is where the next page starts)."""

    rows: list[CommitmentRead]
    more: bool


def commitment_page_for(
    *,
    user: User,
    limit: int,
    role: str | None = None,
    status: str | None = None,
    external_system: str | None = None,
    external_id: str | None = None,
    updated_since: dt.datetime | None = None,
    after: tuple[dt.datetime, uuid.UUID] | None = None,
) -> CommitmentPage:
    """`user`'s commitments as assigner and as assignee (`role` narrows to one
    side; drafts are the assigner's only), newest change first (`updated_at`,
    then id), at most `limit`, after the keyset `after` (the last row of the
    previous page), each with its deep link for `user`. Filters: `status`;
    `external_system` and `external_id` (each alone, or both: one external
    reference); changed at or after `updated_since`.

    Each side is one query, read in index order and cut at `limit` + 1 rows
    (migration commitments 0007; a side's rows are never the other's: the
    assignee side leaves out what `user` also asked), and the two are merged
    here; then the link templates, when a row wants them. At most three
    queries (two with `role`), whatever the number of commitments."""
    sides: list[QuerySet[Commitment]] = []
    if role in (None, "assigner"):
        sides.append(Commitment.objects.filter(assigner=user))
    if role in (None, "assignee"):
        asked = Commitment.objects.filter(assignee=user).exclude(status=Status.DRAFT)
        sides.append(asked.exclude(assigner=user) if role is None else asked)
    rows: list[CommitmentRead] = []
    for side in sides:
        if status is not None:
            side = side.filter(status=status)
        if external_system is not None:
            side = side.filter(external_system=external_system)
        if external_id is not None:
            side = side.filter(external_id=external_id)
        if updated_since is not None:
            side = side.filter(updated_at__gte=updated_since)
        if after is not None:
            at, pk = after
            # The first condition bounds the index range; the second breaks ties.
            side = side.filter(updated_at__lte=at).filter(Q(updated_at__lt=at) | Q(id__lt=pk))
        for values in side.order_by("-updated_at", "-id").values_list(*_LIST_COLUMNS)[: limit + 1]:
            (pk, state, description, deadline, system, ext_id, assigner_id, assigner_email,
             assignee_email, invited, created, updated, link_url) = values  # fmt: skip
            rows.append(
                CommitmentRead(
                    pk=pk,
                    status=state,
                    description=description,
                    deadline=deadline,
                    external_system=system,
                    external_id=ext_id,
                    assigner_id=assigner_id,
                    assigner_email=assigner_email,
                    assignee_email=assignee_email or invited,
                    created_at=created,
                    updated_at=updated,
                    link_url=link_url,
                )
            )
    rows.sort(key=lambda row: (row.updated_at, row.pk), reverse=True)
    page = rows[:limit]
    links = commitment_deep_links(viewer=user, commitments=page)
    page = [replace(row, link=links[row.pk]) for row in page]
    return CommitmentPage(rows=page, more=len(rows) > limit)


# --- the conversation (issue 26) --------------------------------------------------------


def _proposals() -> QuerySet[Proposal]:
    return Proposal.objects.select_related("proposed_by", "answered_by")


def proposal_open_for(*, commitment: Commitment) -> Proposal | None:
    """The commitment's open proposal (a counter-proposal waiting for the
    assigner, or a request for more time), with who made it; None when
    there is none. One query."""
    return _proposals().filter(commitment=commitment, state=ProposalState.OPEN).first()


def proposal_of(*, commitment_id: uuid.UUID, proposal_id: uuid.UUID) -> Proposal | None:
    """One proposal of a commitment, whatever its state (None when the
    commitment has no such proposal): for what an event about it says. One
    query."""
    return Proposal.objects.filter(pk=proposal_id, commitment_id=commitment_id).first()


def comment_body(*, commitment_id: uuid.UUID, comment_id: uuid.UUID) -> str | None:
    """The text of one comment of a commitment (None when it has no such
    comment): for the nudge that tells the other person. One query."""
    return (
        Comment.objects.filter(pk=comment_id, commitment_id=commitment_id)
        .values_list("body", flat=True)
        .first()
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


def proposals_open_made_between(*, after: dt.datetime, before: dt.datetime) -> QuerySet[Proposal]:
    """Open proposals (counter-proposals and requests for more time) made in
    (after, before], oldest first, with their commitment: what the reminders
    ask the assigner to answer (the `proposal_open_idx` index serves it)."""
    return (
        Proposal.objects.filter(
            state=ProposalState.OPEN, created_at__gt=after, created_at__lte=before
        )
        .select_related("commitment__assigner", "commitment__assignee", "commitment__invitation")
        .order_by("created_at")
    )


def proposal_open_made_at(*, commitment_id: uuid.UUID, made_at: dt.datetime) -> bool:
    """Whether the commitment's proposal made at `made_at` is still open."""
    return Proposal.objects.filter(
        commitment_id=commitment_id, state=ProposalState.OPEN, created_at=made_at
    ).exists()


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


@dataclass(frozen=True)
class DeadlineChange:
    at: dt.datetime
    deadline: dt.datetime | None
    why: str  # "Asked", "Renegotiated", "Proposal accepted", "More time granted"


def _when(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value else None


def commitment_deadline_history(
    *, commitment: Commitment, events: Iterable[AuditEvent], proposals: Iterable[Proposal]
) -> list[DeadlineChange]:
    """The deadlines `commitment` had, oldest first: the one asked, then each
    change both people saw (a renegotiation, an accepted proposal with a
    deadline, more time granted). From rows the caller read already (its
    audit trail, `commitment_timeline`; its proposals,
    `commitment_proposals`): no query."""
    changes: list[tuple[dt.datetime, dt.datetime | None, dt.datetime | None, str]] = []
    for event in events:
        if event.action != AuditAction.RENEGOTIATED:
            continue
        new = (event.payload or {}).get("changes", {})
        old = (event.payload or {}).get("previous", {})
        if "deadline" in new:
            changes.append(
                (
                    event.occurred_at,
                    _when(old.get("deadline")),
                    _when(new["deadline"]),
                    "Renegotiated",
                )
            )
    for p in proposals:
        if p.state == ProposalState.ACCEPTED and p.deadline is not None and p.answered_at:
            why = "More time granted" if p.kind == ProposalKind.EXTENSION else "Proposal accepted"
            changes.append((p.answered_at, p.previous_deadline, p.deadline, why))
    changes.sort(key=lambda change: change[0])
    first = changes[0][1] if changes else commitment.deadline
    history = [DeadlineChange(at=commitment.created_at, deadline=first, why="Asked")]
    history += [DeadlineChange(at=at, deadline=new, why=why) for at, _, new, why in changes]
    return history
