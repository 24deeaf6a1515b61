"""Writes to commitments: one function per state-machine move.

Each transition is a compare-and-set: one `UPDATE` whose conditions are who
may act and the statuses the move may start from (the table in docs/api.md,
"Statuses and moves", kept as data in `commitments.machine`), and the terms
version shown, which sets the transition time and writes the audit row and
the outbox row with it (on PostgreSQL one statement); a refused one is judged
by the same table on one read ("helpers" below). No row lock is taken. The
web interface and the API call these same functions: there is one path to
every status.
"""

from __future__ import annotations

import datetime as dt
import functools
import uuid
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Model, OuterRef, Subquery
from django.utils import timezone

from accounts.selectors import users_with_verified_primary_email
from audit.models import AuditAction
from audit.services import Actor, audit_event_build, audit_event_record
from commitments.errors import (
    AddressNotAskable,
    CommentInvalid,
    CommitmentError,
    CommitmentNotFound,
    Contended,
    DuplicateExternalRef,
    InvalidTransition,
    NothingChanged,
    NotPermitted,
    ProposalAlreadyOpen,
    ProposalInvalid,
    ProposalNotOpen,
    ReassignInvalid,
    TermsChanged,
)
from commitments.machine import MOVES, may_create, may_make, who_may
from commitments.models import (
    COMMENT_MAX,
    NOTE_MAX,
    AccordVisit,
    Comment,
    Commitment,
    EventKind,
    Invitation,
    OutboxEvent,
    Proposal,
    ProposalKind,
    ProposalState,
    Status,
)
from lib.db import Decide, Decided, Later, row_version, write_decided, write_together
from lib.logs import request_id_var
from lib.text import is_blank, strip_blank

if TYPE_CHECKING:
    from accounts.models import User

P = ParamSpec("P")
R = TypeVar("R")
UNSET: Any = object()
INVITATION_WINDOW = dt.timedelta(days=1)
DECLINE_REASON_MAX = 500


@dataclass(frozen=True)
class TransitionResult:
    commitment: Commitment
    previous_status: str
    changed: bool


# --- helpers -------------------------------------------------------------------
#
# Every move is a compare-and-set: one `UPDATE commitment ... WHERE id = ... AND
# status IN (<the from-states of the move, commitments.machine>) AND <who may
# make it> [AND terms_version = <the terms shown>] RETURNING ...`, written with
# its audit row, its outbox row and the rows the move makes or closes
# (lib.db.write_decided: on PostgreSQL one statement). What it returned is the
# outcome. When it returned nothing, the row as it is judges the move again by
# the same table (a move that did not read first has it from the same
# statement: `Decide.found`): not found, not permitted, an invalid transition,
# terms changed, or a replay into the status it has (a no-op); a move the row
# still allows lost to a write that left it allowed (a comment, say) and is
# made again, up to ATTEMPTS times (then Contended). A move whose write
# depends on more than the table (its terms, its proposal, the person asked)
# reads the row first, without a lock, and its UPDATE also requires the row to
# be the version it read.


class _Beaten(Exception):
    """The compare-and-set matched no row, and the move is still allowed on
    the row as it is now: made again."""


ATTEMPTS = 50  # each one lost to a write that was made: another always wins


def _compare_and_set(function: Callable[P, R]) -> Callable[P, R]:
    """Make the move, again while it loses to writes that leave it allowed.
    On SQLite each attempt is a transaction (BEGIN IMMEDIATE: its read and
    its writes are serialised with every other writer's); on PostgreSQL the
    compare-and-set needs none (one statement; a caller's transaction, when
    there is one, holds it). Lost ATTEMPTS times: Contended (nothing
    written; the API answers 503 with Retry-After, a page says to try
    again)."""

    @functools.wraps(function)
    def attempt(*args: P.args, **kwargs: P.kwargs) -> R:
        for _ in range(ATTEMPTS):
            try:
                with nullcontext() if connection.vendor == "postgresql" else transaction.atomic():
                    return function(*args, **kwargs)
            except _Beaten:
                continue
        raise Contended()

    return attempt


def _read(**lookup: Any) -> Commitment:
    """The commitment as a move judges it: one plain read, no lock, with
    `open_proposal_id` (its open proposal's id, or None), and what the
    compare-and-set requires unchanged (`judged_status`, `judged_terms`,
    `row_version`)."""
    open_proposal = Proposal.objects.filter(commitment=OuterRef("pk"), state=ProposalState.OPEN)
    try:
        return Commitment.objects.annotate(
            open_proposal_id=Subquery(open_proposal.values("pk")[:1]),
            judged_status=F("status"),
            judged_terms=F("terms_version"),
            row_version=row_version(),
        ).get(**lookup)
    except Commitment.DoesNotExist:
        raise CommitmentNotFound() from None


def _blind() -> bool:
    """Whether a move whose write needs nothing but the table goes straight
    to its UPDATE, reading only when refused: on PostgreSQL. On SQLite every
    move reads first, inside its transaction (BEGIN IMMEDIATE serialises the
    writers, so what it reads is what its UPDATE finds): the same
    compare-and-set and the same judge, and a replay or a refusal costs one
    read, not a refused UPDATE and a read."""
    return connection.vendor == "postgresql"


def _shell(*, move: str, pk: Any, now: dt.datetime, **fields: Any) -> Commitment:
    """The commitment of a move that writes without reading it first (its
    write depends on nothing but the table): its one from-state, as the
    audit row's "from"; `pk` its id, or a stand-in for it (lib.db.Decide's
    marker) when it is found by something else."""
    (status,) = MOVES[move].from_statuses
    return Commitment(pk=pk, status=status, updated_at=now, **fields)


def _refused(
    decided: Decided,
    *,
    move: str,
    actor: Actor,
    terms_version: int | None = None,
    replay_into: str = "",
) -> TransitionResult:
    """After a compare-and-set that matched no row: the row as it is
    (`decided.found`, read by the same statement on PostgreSQL), judged as
    the move is. Raises CommitmentNotFound, NotPermitted, InvalidTransition
    or TermsChanged; returns the replay (nothing to do); raises _Beaten when
    the move is allowed now."""
    commitment = decided.found
    if commitment is None:
        raise CommitmentNotFound()
    assert isinstance(commitment, Commitment)  # Decide.found's
    if not _check(commitment, actor=actor, move=move, replay_into=replay_into):
        return TransitionResult(commitment, commitment.status, False)
    _check_terms(commitment, move=move, terms_version=terms_version)
    raise _Beaten()


@dataclass(frozen=True)
class _Supersede:
    """The write that closes a commitment's open proposal, if it has one, as
    superseded (`_superseding`): `commitment_id` the commitment's id (or its
    stand-in, lib.db.Decide's marker), at `now`."""

    commitment_id: Any
    now: dt.datetime


def _superseding(commitment: Commitment, *, now: dt.datetime) -> list[_Supersede]:
    """The write that closes the commitment's open proposal, if it has one,
    as superseded: for `_record`'s `updates_where`. A move that changes the
    terms, the status or the person asked leaves no proposal on terms that
    are gone. On PostgreSQL it is a part of the move's one statement, which
    writes only if the row is the version the statement reads (so it sees
    every proposal made before), so it costs nothing; on SQLite a move that
    read the row first knows whether there is one to close."""
    known = getattr(commitment, "open_proposal_id", UNSET)
    if connection.vendor != "postgresql" and known is None:
        return []
    commitment.open_proposal_id = None  # type: ignore[attr-defined]  # the read's annotation
    return [_Supersede(commitment.pk, now)]


def _check(commitment: Commitment, *, actor: Actor, move: str, replay_into: str = "") -> bool:
    """Raise unless the table in `commitments.machine` lets `actor` make `move`
    now. Returns False for a replay into `replay_into`, the status the move
    would reach (nothing to do), True otherwise."""
    rule = MOVES[move]
    _check_who(commitment, actor=actor, move=move)
    if replay_into and commitment.status == replay_into:
        return False
    if commitment.status not in rule.from_statuses:
        raise InvalidTransition(action=rule.words, current_status=commitment.status)
    return True


def _check_who(commitment: Commitment, *, actor: Actor, move: str) -> None:
    """Raise NotPermitted unless `actor` is someone the table lets make `move`."""
    rule = MOVES[move]
    if not may_make(rule, actor=actor, commitment=commitment):
        raise NotPermitted(action=rule.words, reason=rule.who)


def _check_terms(commitment: Commitment, *, move: str, terms_version: int | None) -> None:
    """Raise TermsChanged unless `terms_version`, the version of the terms the
    actor was shown, is the current one. None: the caller showed no terms."""
    if terms_version is not None and terms_version != commitment.terms_version:
        raise TermsChanged(
            action=MOVES[move].words,
            shown_version=terms_version,
            current_version=commitment.terms_version,
        )


def _record(
    commitment: Commitment,
    *,
    actor: Actor,
    action: AuditAction,
    previous_status: str,
    event: str | None,
    payload: dict[str, Any] | None = None,
    changed: Sequence[str] = (),
    created: bool = False,
    detail: dict[str, Any] | None = None,
    inserts: Sequence[Any] = (),
    updates: Sequence[tuple[Any, Sequence[str]]] = (),
    updates_where: Sequence[_Supersede] = (),
    move: str = "",
    lookup: dict[str, Any] | None = None,
    terms_version: int | None = None,
    judge: bool = False,
) -> Decided:
    """Write the change with its audit row and its outbox row, in one
    statement on PostgreSQL (lib.db.write_together): the new commitment
    (`created`) or, for `move`, the fields `_move` changed (`changed`) as a
    compare-and-set (`_decide`), and the rows the move makes or changes with
    it (`inserts`: a proposal, a comment; `updates`: an answered proposal;
    `updates_where`: `_superseding`). `detail`: the outbox row's (what the
    move was about, for the nudges and webhooks it causes). Returns what the
    write did: the commitment as the move left it, or none when the
    compare-and-set matched no row (and nothing was written); then, with
    `judge`, the row as it is, to judge the refusal by (`_refused`)."""
    body = {"from": previous_status or None, "to": commitment.status}
    body.update(payload or {})
    rows: list[Any] = [
        audit_event_build(actor=actor, subject=commitment, action=action, payload=body)
    ]
    if event == EventKind.HANDSHAKE_REQUESTED and commitment.assignee_id is None:
        # Nobody has an account for the address asked yet: the nudge is an
        # invitation to it (the workers read `commitment.invitation`). A
        # renegotiation of such a request stays `renegotiated`, which nudges
        # nobody: the address is not mailed again, and whatever still tells
        # it (a digest waiting to go, the Accord after sign-up) shows the
        # terms as they are then (docs/security.md, "Invitations").
        event = EventKind.INVITED
    if event is not None:
        # Announced by the database itself: on PostgreSQL the insert notifies
        # the relay when the transaction commits (migration 0006), elsewhere the
        # relay looks every OUTBOX_RELAY_WAIT s (relay/listener.py). Nothing
        # runs on this request's path for it.
        rows.append(
            OutboxEvent(
                commitment=commitment,
                kind=event,
                previous_status=previous_status,
                new_status=commitment.status,
                occurred_at=commitment.updated_at,
                actor_kind=actor.kind,
                actor_user=actor.user,
                actor_token_id=actor.token_id,
                request_id=request_id_var.get() or "",
                detail=detail or {},
            )
        )
    if created:
        write_together(inserts=[commitment, *inserts, *rows])
        return Decided(commitment)
    lookup = lookup or {"pk": commitment.pk}
    decide = _decide(
        commitment,
        move=move,
        actor=actor,
        lookup=lookup,
        changed=changed,
        terms_version=terms_version,
        judge=judge,
        supersede=updates_where,
    )
    if isinstance(decide, Decided):  # nobody the actor is may make it
        return decide
    return write_decided(decide, inserts=[*inserts, *rows], updates=updates)


def _decide(
    commitment: Commitment,
    *,
    move: str,
    actor: Actor,
    lookup: dict[str, Any],
    changed: Sequence[str],
    terms_version: int | None,
    judge: bool = False,
    supersede: Sequence[_Supersede] = (),
) -> Later | Decided:
    """The compare-and-set of `move`: the commitment `lookup` finds, if it
    has a status `move` starts from and `actor` is someone the table lets
    make it, set to the `changed` fields' new values. After a read
    (`_read`): also the status and terms version read, and the version of
    the row. Without one: the terms version shown (`terms_version`), if any.
    With `judge`, what `lookup` finds is read when it is refused
    (`Decide.found`). With it, the `supersede` writes. When `actor` may make
    `move` on no commitment, the refusal at once (Decided, with the row read
    to judge by, if `judge`).

    As a lib.db.Later: the querysets are built from the inputs (each value
    they hold, a user as its key), once per shape on PostgreSQL."""
    rule = MOVES[move]
    if who_may(rule, actor=actor) is None:
        found = Commitment.objects.filter(**lookup)
        return Decided(None, found.first() if judge else None)
    statuses = set(rule.from_statuses)
    judged = getattr(commitment, "judged_status", None)
    version = None
    conditions: dict[str, Any] = {}
    if judged is not None:
        statuses &= {judged}
        conditions["terms_version"] = commitment.judged_terms  # type: ignore[attr-defined]  # _read's
        version = commitment.row_version  # type: ignore[attr-defined]  # _read's
    elif terms_version is not None:
        conditions["terms_version"] = terms_version
    meta = commitment._meta
    values = {name: meta.get_field(name).pre_save(commitment, False) for name in changed}  # type: ignore[union-attr]  # concrete fields
    marker = None if "pk" in lookup else commitment.pk
    # The inputs, in this order: lookup's, the actor's key, the statuses, the
    # conditions', the values', the version, the marker, each superseding's.
    names = sorted(lookup)
    ordered_statuses = sorted(statuses)
    inputs = [_plain(lookup[name]) for name in names]
    inputs.append(actor.user.pk)
    inputs += [_plain(status) for status in ordered_statuses]
    inputs += [_plain(conditions[name]) for name in sorted(conditions)]
    inputs += [_plain(values[name]) for name in changed]
    if version is not None:
        inputs.append(version)
    if marker is not None:
        inputs.append(marker)
    for item in supersede:
        inputs += [item.commitment_id, item.now]
        inputs += [ProposalState.OPEN.value, ProposalState.SUPERSEDED.value]
    shape = (
        move,
        tuple(names),
        actor.kind,
        actor.token_id is not None,
        len(ordered_statuses),
        tuple(sorted(conditions)),
        tuple(changed),
        version is not None,
        marker is not None,
        len(supersede),
        judge,
    )
    n_statuses = len(ordered_statuses)

    def build(*values_in: Any) -> tuple[Decide, list[tuple[Any, dict[str, Any]]]]:
        at = iter(values_in)
        found = Commitment.objects.filter(**{name: next(at) for name in names})
        who = who_may(rule, actor=replace(actor, user=_Key(next(at))))
        assert who is not None  # as above: the same actor's kind
        in_statuses = [next(at) for _ in range(n_statuses)]
        kept_conditions = {name: next(at) for name in sorted(conditions)}
        new_values = {name: next(at) for name in changed}
        kept_version = next(at) if version is not None else None
        kept_marker = next(at) if marker is not None else None
        where = []
        for _ in supersede:
            pk, now, open_state, superseded = next(at), next(at), next(at), next(at)
            where.append(
                (
                    Proposal.objects.filter(commitment_id=pk, state=open_state),
                    {"state": superseded, "answered_at": now},
                )
            )
        queryset = found.filter(who, status__in=in_statuses, **kept_conditions)
        decide = Decide(
            queryset,
            new_values,
            version=kept_version,
            marker=kept_marker,
            found=found if judge else None,
        )
        return decide, where

    return Later(shape, tuple(inputs), build)


@dataclass(frozen=True)
class _Key:
    """A user as `who_may` reads one: its key."""

    pk: Any


def _plain(value: Any) -> Any:
    """A choice (Status.COMPLETED) as its plain value, a row as its key: as
    the database gets them."""
    if isinstance(value, Enum):
        return value.value
    return value.pk if isinstance(value, Model) else value


def _written(decided: Decided) -> Commitment:
    """The commitment a move read first and wrote; a write that matched no
    row lost to another one since the read: judged again on a new read."""
    if decided.row is None:
        raise _Beaten()
    assert isinstance(decided.row, Commitment)  # the decided row
    return decided.row


def _move(
    commitment: Commitment,
    *,
    to: str,
    stamp_field: str | None,
    now: dt.datetime,
    extra_fields: tuple[str, ...] = (),
) -> tuple[str, list[str]]:
    """Move the commitment to `to`, in memory: returns the status it
    left and the fields to write, which `_record` writes with the audit and
    outbox rows."""
    previous = commitment.status
    commitment.status = to
    commitment.updated_at = now
    fields = ["status", "updated_at", *extra_fields]
    if stamp_field:
        setattr(commitment, stamp_field, now)
        fields.append(stamp_field)
    return previous, fields


def _clean_text(value: str) -> str:
    """Trimmed by the API's one definition of blank (lib.text)."""
    return strip_blank(value or "")


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value else None


def _apply_terms(
    commitment: Commitment, *, description: str, deadline: dt.datetime | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Set the terms that differ (UNSET leaves one as it is) and return what
    changed, as the audit trail records it: the new values, and the values they
    replaced (so the timeline can say "old → new"), for a draft edit and a
    renegotiation alike."""
    changes: dict[str, Any] = {}
    previous: dict[str, Any] = {}
    if description is not UNSET and _clean_text(description) != commitment.description:
        previous["description"] = commitment.description
        commitment.description = _clean_text(description)
        changes["description"] = commitment.description
    if deadline is not UNSET and deadline != commitment.deadline:
        previous["deadline"] = _iso(commitment.deadline)
        commitment.deadline = deadline
        changes["deadline"] = _iso(deadline)
    return changes, previous


# --- creation ------------------------------------------------------------------


def _create(
    *,
    actor: Actor,
    status: str,
    action: AuditAction,
    event: str | None,
    assigner: User,
    assignee: User | None,
    description: str,
    deadline: dt.datetime | None,
    raw_text: str | None,
    external_system: str | None,
    external_id: str | None,
    invitation: Invitation | None = None,
    link_url: str | None = None,
) -> Commitment:
    if not may_create(actor=actor, assigner_id=assigner.pk):
        raise NotPermitted(action=action, reason="only the assigner creates a commitment")
    payload: dict[str, Any] = {}
    if external_system is not None:
        payload = {"externalSystem": external_system, "externalId": external_id}
    now = timezone.now()
    commitment = Commitment(
        status=status,
        assigner=assigner,
        assignee=assignee,
        invitation=invitation,
        description=_clean_text(description),
        deadline=deadline,
        raw_text=raw_text,
        external_system=external_system,
        external_id=external_id,
        link_url=link_url,
        # One instant: updatedAt is never before createdAt.
        created_at=now,
        updated_at=now,
    )
    # Outside a transaction the one statement of _record is a transaction by
    # itself (no BEGIN and COMMIT to send); inside the caller's, a savepoint
    # keeps that transaction usable after a duplicate.
    in_transaction = transaction.get_connection().in_atomic_block
    try:
        with transaction.atomic() if in_transaction else nullcontext():
            _record(
                commitment,
                actor=actor,
                action=action,
                previous_status="",
                event=event,
                payload=payload,
                created=True,
            )
    except IntegrityError as exc:
        if "commitment_external_ref_unique" in str(exc) or (
            external_system is not None
            and Commitment.objects.filter(
                external_system=external_system, external_id=external_id, assigner=assigner
            ).exists()
        ):
            raise DuplicateExternalRef() from exc
        raise
    return commitment


def commitment_create_pending(
    *,
    actor: Actor,
    assigner: User,
    assignee: User,
    description: str,
    deadline: dt.datetime | None,
    external_system: str | None = None,
    external_id: str | None = None,
    raw_text: str | None = None,
    link_url: str | None = None,
) -> Commitment:
    """Create a commitment straight into Pending_Handshake (the inbox path, and
    a tracker connection's) and request the assignee's handshake. Raises
    DuplicateExternalRef when the (external_system, external_id, assigner)
    constraint refuses the row. `link_url`: the source's own link to it."""
    return _create(
        actor=actor,
        status=Status.PENDING_HANDSHAKE,
        action=AuditAction.CREATED,
        event=EventKind.HANDSHAKE_REQUESTED,
        assigner=assigner,
        assignee=assignee,
        description=description,
        deadline=deadline,
        raw_text=raw_text,
        external_system=external_system,
        external_id=external_id,
        link_url=link_url,
    )


def commitment_create_draft(
    *,
    actor: Actor,
    assignee: User | None,
    description: str,
    deadline: dt.datetime | None = None,
    raw_text: str | None = None,
) -> Commitment:
    """A draft from the capture surface; nobody is notified until it is sent."""
    return _create(
        actor=actor,
        status=Status.DRAFT,
        action=AuditAction.DRAFT_CREATED,
        event=None,
        assigner=actor.user,
        assignee=assignee,
        description=description,
        deadline=deadline,
        raw_text=raw_text,
        external_system=None,
        external_id=None,
    )


def _invitation_for(*, assigner: User, email: str, now: dt.datetime) -> Invitation:
    """The invitation row of an address nobody can be asked at yet, within
    the assigner's daily limit (settings.INVITATIONS_PER_DAY), so the form
    cannot be used to mail strangers in bulk. Every ask to an address without
    an account counts, a repeated one too: the invitation mail to one address
    is capped by the workers (notifications.dispatch), but each ask still
    adds a request that the address's digest lists (docs/security.md,
    "Invitations")."""
    # Count and insert under a lock on the asker's row, so two asks at once
    # cannot both take the last place of the day. FOR NO KEY UPDATE: it
    # serialises this asker's asks without blocking the inserts that merely
    # reference the row (their FOR KEY SHARE). SQLite has no row locks, but
    # its write transactions (BEGIN IMMEDIATE) are serialised already.
    get_user_model().objects.select_for_update(no_key=True).values("pk").get(pk=assigner.pk)
    recent = Commitment.objects.filter(
        assigner=assigner, invitation__isnull=False, created_at__gte=now - INVITATION_WINDOW
    ).count()
    if recent >= settings.INVITATIONS_PER_DAY:
        raise AddressNotAskable(
            f"You have asked people without an account {recent} times today, the most a "
            "day; ask them again tomorrow."
        )
    invitation, _ = Invitation.objects.get_or_create(email=email)
    return invitation


def commitment_ask(
    *,
    actor: Actor,
    assignee_email: str,
    description: str,
    deadline: dt.datetime | None,
    send: bool,
) -> Commitment:
    """Ask someone by e-mail address from the web form: a Draft (`send`
    False) or, at once, a request for the handshake. An address that is no
    active account's verified address is invited: the commitment references
    its `Invitation` and waits (no assignee) until an account verifies the
    address (commitment_invitations_claim); the `invited` outbox row makes
    the workers mail the invitation (at most one mail a day to an address,
    notifications.dispatch). A deactivated account's address, or an ask over
    the asker's daily limit, raises AddressNotAskable. One transaction."""
    email = (assignee_email or "").strip().lower()
    now = timezone.now()
    with transaction.atomic():
        assignee = users_with_verified_primary_email().filter(email__iexact=email).first()
        invitation = None
        if assignee is None:
            if get_user_model().objects.filter(email__iexact=email, is_active=False).exists():
                raise AddressNotAskable("This address belongs to a closed account.")
            invitation = _invitation_for(assigner=actor.user, email=email, now=now)
        return _create(
            actor=actor,
            status=Status.PENDING_HANDSHAKE if send else Status.DRAFT,
            action=AuditAction.CREATED if send else AuditAction.DRAFT_CREATED,
            event=EventKind.HANDSHAKE_REQUESTED if send else None,
            assigner=actor.user,
            assignee=assignee,
            invitation=invitation,
            description=description,
            deadline=deadline,
            raw_text=None,
            external_system=None,
            external_id=None,
        )


@transaction.atomic
def commitment_invitations_claim(*, user: User) -> int:
    """Attach the commitments waiting for `user`'s address to them, once the
    address is their verified login address (accounts sends `email_verified`
    when an address is proved; commitments.receivers calls this). Each
    commitment gets an audit row; nobody is nudged again (the invitation
    was the nudge). Returns how many commitments were attached."""
    if not users_with_verified_primary_email().filter(pk=user.pk).exists():
        return 0
    invitation = (
        Invitation.objects.select_for_update()
        .filter(email=user.email.lower(), claimed_at__isnull=True)
        .first()
    )
    if invitation is None:
        return 0
    now = timezone.now()
    waiting = list(
        Commitment.objects.select_for_update().filter(invitation=invitation, assignee__isnull=True)
    )
    actor = Actor.for_user(user)
    for commitment in waiting:
        commitment.assignee = user
        commitment.updated_at = now
        commitment.save(update_fields=["assignee", "updated_at"])
        audit_event_record(
            actor=actor,
            subject=commitment,
            action=AuditAction.ASSIGNEE_JOINED,
            payload={"invitation": str(invitation.pk)},
        )
    invitation.claimed_by = user
    invitation.claimed_at = now
    invitation.save(update_fields=["claimed_by", "claimed_at"])
    return len(waiting)


def accord_visit_record(*, user: User, now: dt.datetime) -> dt.datetime | None:
    """Remember that `user` looked at their Accord at `now`; returns when they
    had looked before (None the first time), for the "new" and "changed"
    markers. Two statements and no lock: two tabs opening the Accord at once
    both get an answer (a first visit's insert ignores a twin)."""
    previous = AccordVisit.objects.filter(user=user).values_list("seen_at", flat=True).first()
    if previous is None:
        AccordVisit.objects.bulk_create(
            [AccordVisit(user=user, seen_at=now)], ignore_conflicts=True
        )
    else:
        AccordVisit.objects.filter(user=user).update(seen_at=now)
    return previous


# --- transitions ---------------------------------------------------------------


@_compare_and_set
def commitment_update_draft(
    *,
    actor: Actor,
    commitment_id: uuid.UUID,
    description: str = UNSET,
    deadline: dt.datetime | None = UNSET,
    assignee: User = UNSET,
    terms_version: int | None = None,
) -> Commitment:
    """A plain edit of a Draft: no transition, no notification. Only what
    differs is saved and audited; an edit that changes nothing raises
    NothingChanged and records nothing. `terms_version` is the version the
    edit form showed: an edit of terms changed since (another tab, another
    session) raises TermsChanged and changes nothing, so no edit is lost."""
    commitment = _read(pk=commitment_id)
    _check(commitment, actor=actor, move="edit_draft")
    _check_terms(commitment, move="edit_draft", terms_version=terms_version)
    changes, previous = _apply_terms(commitment, description=description, deadline=deadline)
    if assignee is not UNSET and assignee.pk != commitment.assignee_id:
        previous["assigneeId"] = str(commitment.assignee_id)
        commitment.assignee = assignee
        changes["assigneeId"] = str(assignee.pk)
    if not changes:
        raise NothingChanged("The draft is unchanged.")
    commitment.terms_version += 1
    fields = ["updated_at", "description", "deadline", "assignee", "terms_version"]
    _written(
        _record(
            commitment,
            changed=_touch(commitment, timezone.now()) + fields[1:],
            actor=actor,
            action=AuditAction.DRAFT_EDITED,
            previous_status=commitment.status,
            event=None,
            payload={**changes, "previous": previous, "termsVersion": commitment.terms_version},
            move="edit_draft",
        )
    )
    return commitment


def _assignee_answers(
    *,
    actor: Actor,
    commitment_id: uuid.UUID,
    move: str,
    to: str,
    stamp_field: str,
    audit_action: AuditAction,
    event: str,
    terms_version: int | None,
    payload: dict[str, Any] | None = None,
) -> TransitionResult:
    """The handshake: the assignee answers a Pending_Handshake commitment, on
    the terms they were shown (TermsChanged when those are not the current
    ones: nothing is accepted or declined). Its write depends on nothing but
    the table: no read first."""
    now = timezone.now()
    lookup = {"pk": commitment_id}
    if _blind():
        commitment = _shell(move=move, pk=commitment_id, now=now)
    else:
        commitment = _read(**lookup)
        _check(commitment, actor=actor, move=move)
        _check_terms(commitment, move=move, terms_version=terms_version)
    previous, changed = _move(commitment, to=to, stamp_field=stamp_field, now=now)
    written = _record(
        commitment,
        changed=changed,
        actor=actor,
        action=audit_action,
        previous_status=previous,
        event=event,
        payload=payload,
        updates_where=_superseding(commitment, now=now),
        move=move,
        terms_version=terms_version,
        judge=True,
    )
    if written.row is None:
        return _refused(written, move=move, actor=actor, terms_version=terms_version)
    return TransitionResult(_written(written), previous, True)


@_compare_and_set
def commitment_send_for_handshake(*, actor: Actor, commitment_id: uuid.UUID) -> TransitionResult:
    commitment = _read(pk=commitment_id)
    _check(commitment, actor=actor, move="send")
    previous, changed = _move(
        commitment, to=Status.PENDING_HANDSHAKE, stamp_field=None, now=timezone.now()
    )
    _written(
        _record(
            commitment,
            changed=changed,
            actor=actor,
            action=AuditAction.SENT_FOR_HANDSHAKE,
            previous_status=previous,
            event=EventKind.HANDSHAKE_REQUESTED,
            move="send",
        )
    )
    return TransitionResult(commitment, previous, True)


@_compare_and_set
def commitment_accept(
    *, actor: Actor, commitment_id: uuid.UUID, terms_version: int | None = None
) -> TransitionResult:
    """`terms_version`: the version of the terms shown to the assignee. Every
    caller that shows terms (the page, any API) passes it; a move on terms
    changed since raises TermsChanged and changes nothing."""
    return _assignee_answers(
        actor=actor,
        commitment_id=commitment_id,
        move="accept",
        to=Status.ACTIVE,
        stamp_field="activated_at",
        audit_action=AuditAction.ACCEPTED,
        event=EventKind.ACTIVATED,
        terms_version=terms_version,
    )


@_compare_and_set
def commitment_decline(
    *,
    actor: Actor,
    commitment_id: uuid.UUID,
    terms_version: int | None = None,
    reason: str = "",
) -> TransitionResult:
    """`terms_version`: the version of the terms shown to the assignee. Every
    caller that shows terms (the page, any API) passes it; a move on terms
    changed since raises TermsChanged and changes nothing. `reason`, when
    given, is kept on the audit row (at most DECLINE_REASON_MAX characters)."""
    return _assignee_answers(
        actor=actor,
        commitment_id=commitment_id,
        move="decline",
        to=Status.REFUSED,
        stamp_field="refused_at",
        audit_action=AuditAction.DECLINED,
        event=EventKind.REFUSED,
        terms_version=terms_version,
        payload={"reason": _clean_text(reason)[:DECLINE_REASON_MAX]}
        if not is_blank(reason or "")
        else None,
    )


@_compare_and_set
def commitment_complete(
    *,
    actor: Actor,
    commitment_id: uuid.UUID | None = None,
    external_system: str | None = None,
    external_id: str | None = None,
    replay_is_noop: bool = False,
) -> TransitionResult:
    """Active -> Completed, by the assigner, the assignee, or the assigner's token.

    Found by id, or (for sync) by external reference among the actor's own
    commitments as assigner. With `replay_is_noop`, a commitment already
    Completed is returned unchanged and nothing is written.

    By external reference the write needs nothing but the table and the
    reference (the audit row's payload): one `UPDATE` found by it, no read
    first (a completing sync: the token, then that one statement). By id it
    reads the row first, for the payload (whether it has a reference).
    """
    replay_into = Status.COMPLETED if replay_is_noop else ""
    now = timezone.now()
    lookup: dict[str, Any] = {"pk": commitment_id}
    if commitment_id is None:
        lookup = {
            "external_system": external_system,
            "external_id": external_id,
            "assigner": actor.user,
        }
    if commitment_id is not None or not _blind():
        commitment = _read(**lookup)
        if not _check(commitment, actor=actor, move="complete", replay_into=replay_into):
            return TransitionResult(commitment, commitment.status, False)
    else:
        # Its id stands in for the one the UPDATE finds (lib.db.Decide.marker).
        commitment = _shell(
            move="complete",
            pk=uuid.uuid4(),
            now=now,
            external_system=external_system,
            external_id=external_id,
        )
    previous, changed = _move(commitment, to=Status.COMPLETED, stamp_field="completed_at", now=now)
    payload = {}
    if commitment.has_external_ref:
        payload = {
            "externalSystem": commitment.external_system,
            "externalId": commitment.external_id,
        }
    written = _record(
        commitment,
        changed=changed,
        actor=actor,
        action=AuditAction.COMPLETED,
        previous_status=previous,
        event=EventKind.COMPLETED,
        payload=payload,
        updates_where=_superseding(commitment, now=now),
        move="complete",
        lookup=lookup,
        judge=True,
    )
    if written.row is None:
        return _refused(written, move="complete", actor=actor, replay_into=replay_into)
    return TransitionResult(_written(written), previous, True)


@_compare_and_set
def commitment_renegotiate(
    *,
    actor: Actor,
    commitment_id: uuid.UUID,
    description: str = UNSET,
    deadline: dt.datetime | None = UNSET,
    terms_version: int | None = None,
) -> TransitionResult:
    """The assigner changes the description or deadline before a handshake
    completed; the assignee is asked for the handshake again. `terms_version`
    is the version the edit form showed (TermsChanged when it is stale)."""
    commitment = _read(pk=commitment_id)
    _check(commitment, actor=actor, move="renegotiate")
    _check_terms(commitment, move="renegotiate", terms_version=terms_version)
    changes, replaced = _apply_terms(commitment, description=description, deadline=deadline)
    if not changes:
        raise NothingChanged()
    commitment.terms_version += 1
    now = timezone.now()
    previous, changed = _move(
        commitment,
        to=Status.PENDING_HANDSHAKE,
        stamp_field="renegotiated_at",
        now=now,
        extra_fields=("description", "deadline", "terms_version"),
    )
    _written(
        _record(
            commitment,
            changed=changed,
            actor=actor,
            action=AuditAction.RENEGOTIATED,
            previous_status=previous,
            event=EventKind.RENEGOTIATED,
            payload={
                "changes": changes,
                "previous": replaced,
                "termsVersion": commitment.terms_version,
            },
            # A counter-proposal waiting answers terms that are gone.
            updates_where=_superseding(commitment, now=now),
            move="renegotiate",
        )
    )
    return TransitionResult(commitment, previous, True)


# --- the conversation (issue 26) ----------------------------------------------------
#
# A counter-proposal (on Pending_Handshake) or a request for more time (an
# extension, on Active) is a Proposal row, at most one open per commitment;
# its answer closes it. Each move below reads the commitment (and the
# proposal it answers), checks the table (`commitments.machine`), and writes
# its rows, its audit row and its outbox row (with `detail`: what it was
# about) in one compare-and-set (`_record`) that requires the row to be the
# version read: of two answers at once the second is judged again and told.


def _note_text(value: str) -> str:
    """A proposal's, an answer's or a withdrawal's note: trimmed, at most
    NOTE_MAX characters (as a decline's reason)."""
    return _clean_text(value)[:NOTE_MAX]


def _answered_proposal(
    commitment: Commitment, *, actor: Actor, move: str, proposal_id: uuid.UUID, kind: str
) -> Proposal:
    """The (read) commitment's open proposal of `kind` that `proposal_id`
    names, for `actor` to answer with `move`. NotPermitted for anyone the
    table does not let answer; ProposalNotOpen for a proposal answered
    already (the second of two answers at once: its compare-and-set is
    refused, and judged again it sees the first one's) or superseded;
    InvalidTransition from a status the move cannot start from;
    ProposalNotOpen for an id that is not this commitment's open proposal of
    `kind`."""
    _check_who(commitment, actor=actor, move=move)
    proposal = (
        Proposal.objects.filter(pk=proposal_id, commitment_id=commitment.pk, kind=kind)
        .select_related("proposed_by")
        .first()
    )
    if proposal is not None and proposal.state != ProposalState.OPEN:
        raise ProposalNotOpen()
    _check(commitment, actor=actor, move=move)
    if proposal is None:
        raise ProposalNotOpen()
    return proposal


def _proposed_terms_taken(
    commitment: Commitment,
    proposal: Proposal,
    *,
    description: str,
    deadline: dt.datetime | None,
) -> dict[str, Any]:
    """The terms an accepted proposal asked for, made the commitment's (in
    memory, a new terms version): returns the audit payload of the answer
    (the proposal, what changed, what it replaced, the new version)."""
    changes, replaced = _apply_terms(commitment, description=description, deadline=deadline)
    commitment.terms_version += 1
    return {
        "proposalId": str(proposal.pk),
        "changes": changes,
        "previous": replaced,
        "termsVersion": commitment.terms_version,
    }


def _ensure_none_open(commitment: Commitment) -> None:
    if Proposal.objects.filter(commitment_id=commitment.pk, state=ProposalState.OPEN).exists():
        raise ProposalAlreadyOpen()


def _close(
    proposal: Proposal, *, state: str, actor: Actor, now: dt.datetime, note: str = ""
) -> tuple[Proposal, list[str]]:
    """The proposal answered, in memory: the update for `_record`."""
    proposal.state = state
    proposal.answered_at = now
    proposal.answered_by = actor.user
    proposal.answer_note = _note_text(note)
    return (proposal, ["state", "answered_at", "answered_by", "answer_note"])


def _touch(commitment: Commitment, now: dt.datetime) -> list[str]:
    """A move that keeps the status still changes the commitment (the Accord
    marks it changed; the outbox row's time is its `updated_at`)."""
    commitment.updated_at = now
    return ["updated_at"]


@_compare_and_set
def commitment_propose(
    *,
    actor: Actor,
    commitment_id: uuid.UUID,
    terms_version: int,
    deadline: dt.datetime | None = UNSET,
    description: str = UNSET,
    note: str = "",
) -> Proposal:
    """A counter-proposal: the assignee offers other terms (a deadline, and
    or a wording; UNSET or a blank wording leaves that term as asked) instead
    of answering a request waiting for their handshake, on the terms they
    were shown (`terms_version`: TermsChanged when those changed). The status
    stays Pending_Handshake. NothingChanged when nothing differs from the
    terms asked; ProposalAlreadyOpen while one waits. Outbox `proposed`
    (detail proposalId), to the assigner."""
    commitment = _read(pk=commitment_id)
    _check(commitment, actor=actor, move="propose")
    _check_terms(commitment, move="propose", terms_version=terms_version)
    _ensure_none_open(commitment)
    new_description = None
    if description is not UNSET and not is_blank(description or ""):
        cleaned = _clean_text(description)
        new_description = cleaned if cleaned != commitment.description else None
    new_deadline = None
    if deadline is not UNSET and deadline is not None and deadline != commitment.deadline:
        new_deadline = deadline
    if new_description is None and new_deadline is None:
        raise NothingChanged("A counter-proposal must change the deadline or the description.")
    now = timezone.now()
    proposal = Proposal(
        commitment=commitment,
        kind=ProposalKind.COUNTER,
        proposed_by=actor.user,
        description=new_description,
        deadline=new_deadline,
        terms_version=commitment.terms_version,
        previous_deadline=commitment.deadline,
        note=_note_text(note),
        created_at=now,
    )
    payload: dict[str, Any] = {"proposalId": str(proposal.pk), "termsVersion": terms_version}
    if new_description is not None:
        payload["description"] = new_description
    if new_deadline is not None:
        payload["deadline"] = _iso(new_deadline)
    if proposal.note:
        payload["note"] = proposal.note
    _written(
        _record(
            commitment,
            changed=_touch(commitment, now),
            actor=actor,
            action=AuditAction.PROPOSED,
            previous_status=commitment.status,
            event=EventKind.PROPOSED,
            payload=payload,
            detail={"proposalId": str(proposal.pk)},
            inserts=[proposal],
            move="propose",
        )
    )
    return proposal


@_compare_and_set
def commitment_proposal_accept(
    *, actor: Actor, commitment_id: uuid.UUID, proposal_id: uuid.UUID
) -> TransitionResult:
    """The assigner accepts the open counter-proposal: the terms become the
    proposed ones (a new terms version) and the commitment is Active at once,
    since the assignee offered exactly those. Audit `proposal_accepted`;
    outbox `activated`, the contract's event (detail proposalId), which
    nudges the assignee."""
    commitment = _read(pk=commitment_id)
    proposal = _answered_proposal(
        commitment,
        actor=actor,
        move="accept_proposal",
        proposal_id=proposal_id,
        kind=ProposalKind.COUNTER,
    )
    description = proposal.description if proposal.description is not None else UNSET
    deadline = proposal.deadline if proposal.deadline is not None else UNSET
    payload = _proposed_terms_taken(
        commitment, proposal, description=description, deadline=deadline
    )
    now = timezone.now()
    previous, changed = _move(
        commitment,
        to=Status.ACTIVE,
        stamp_field="activated_at",
        now=now,
        extra_fields=("description", "deadline", "terms_version"),
    )
    _written(
        _record(
            commitment,
            changed=changed,
            actor=actor,
            action=AuditAction.PROPOSAL_ACCEPTED,
            previous_status=previous,
            event=EventKind.ACTIVATED,
            payload=payload,
            detail={"proposalId": str(proposal.pk)},
            updates=[_close(proposal, state=ProposalState.ACCEPTED, actor=actor, now=now)],
            move="accept_proposal",
        )
    )
    return TransitionResult(commitment, previous, True)


def _decline_proposal(
    *,
    actor: Actor,
    commitment_id: uuid.UUID,
    proposal_id: uuid.UUID,
    note: str,
    move: str,
    kind: str,
    action: AuditAction,
    event: str,
) -> Proposal:
    commitment = _read(pk=commitment_id)
    proposal = _answered_proposal(
        commitment, actor=actor, move=move, proposal_id=proposal_id, kind=kind
    )
    now = timezone.now()
    answered = _close(proposal, state=ProposalState.DECLINED, actor=actor, now=now, note=note)
    payload: dict[str, Any] = {"proposalId": str(proposal.pk)}
    if proposal.answer_note:
        payload["note"] = proposal.answer_note
    _written(
        _record(
            commitment,
            changed=_touch(commitment, now),
            actor=actor,
            action=action,
            previous_status=commitment.status,
            event=event,
            payload=payload,
            detail={"proposalId": str(proposal.pk)},
            updates=[answered],
            move=move,
        )
    )
    return proposal


@_compare_and_set
def commitment_proposal_decline(
    *, actor: Actor, commitment_id: uuid.UUID, proposal_id: uuid.UUID, note: str = ""
) -> Proposal:
    """The assigner declines the open counter-proposal: the terms asked wait
    for the handshake again (the status stays Pending_Handshake). Outbox
    `proposal_declined` (detail proposalId), to the assignee."""
    return _decline_proposal(
        actor=actor,
        commitment_id=commitment_id,
        proposal_id=proposal_id,
        note=note,
        move="decline_proposal",
        kind=ProposalKind.COUNTER,
        action=AuditAction.PROPOSAL_DECLINED,
        event=EventKind.PROPOSAL_DECLINED,
    )


@_compare_and_set
def commitment_extension_request(
    *, actor: Actor, commitment_id: uuid.UUID, deadline: dt.datetime, note: str = ""
) -> Proposal:
    """The assignee of an Active commitment asks for more time: a later
    deadline (ProposalInvalid without one, or for a commitment without a
    deadline), with a note. Asking after the deadline passed is allowed and
    says so (`afterDeadline` in the audit row and the outbox detail). Outbox
    `extension_requested`, to the assigner."""
    commitment = _read(pk=commitment_id)
    _check(commitment, actor=actor, move="request_extension")
    _ensure_none_open(commitment)
    if commitment.deadline is None:
        raise ProposalInvalid("It has no deadline to move.")
    if deadline is None or deadline is UNSET:
        raise ProposalInvalid("Say by when: more time needs a new deadline.")
    if deadline <= commitment.deadline:
        raise ProposalInvalid("More time needs a deadline later than the current one.")
    now = timezone.now()
    proposal = Proposal(
        commitment=commitment,
        kind=ProposalKind.EXTENSION,
        proposed_by=actor.user,
        deadline=deadline,
        terms_version=commitment.terms_version,
        previous_deadline=commitment.deadline,
        note=_note_text(note),
        created_at=now,
    )
    after_deadline = commitment.deadline < now
    payload: dict[str, Any] = {
        "proposalId": str(proposal.pk),
        "deadline": _iso(deadline),
        "previousDeadline": _iso(commitment.deadline),
        "afterDeadline": after_deadline,
    }
    if proposal.note:
        payload["note"] = proposal.note
    _written(
        _record(
            commitment,
            changed=_touch(commitment, now),
            actor=actor,
            action=AuditAction.EXTENSION_REQUESTED,
            previous_status=commitment.status,
            event=EventKind.EXTENSION_REQUESTED,
            payload=payload,
            detail={"proposalId": str(proposal.pk), "afterDeadline": after_deadline},
            inserts=[proposal],
            move="request_extension",
        )
    )
    return proposal


@_compare_and_set
def commitment_extension_grant(
    *, actor: Actor, commitment_id: uuid.UUID, proposal_id: uuid.UUID
) -> Proposal:
    """The assigner grants the open request for more time: the deadline
    becomes the asked one (a new terms version), the commitment stays
    Active. Outbox `extension_granted` (detail proposalId), to the assignee."""
    commitment = _read(pk=commitment_id)
    proposal = _answered_proposal(
        commitment,
        actor=actor,
        move="grant_extension",
        proposal_id=proposal_id,
        kind=ProposalKind.EXTENSION,
    )
    payload = _proposed_terms_taken(
        commitment, proposal, description=UNSET, deadline=proposal.deadline
    )
    now = timezone.now()
    _written(
        _record(
            commitment,
            changed=[*_touch(commitment, now), "deadline", "terms_version"],
            actor=actor,
            action=AuditAction.EXTENSION_GRANTED,
            previous_status=commitment.status,
            event=EventKind.EXTENSION_GRANTED,
            payload=payload,
            detail={"proposalId": str(proposal.pk)},
            updates=[_close(proposal, state=ProposalState.ACCEPTED, actor=actor, now=now)],
            move="grant_extension",
        )
    )
    return proposal


@_compare_and_set
def commitment_extension_decline(
    *, actor: Actor, commitment_id: uuid.UUID, proposal_id: uuid.UUID, note: str = ""
) -> Proposal:
    """The assigner declines the open request for more time: the deadline
    stays. Outbox `extension_declined` (detail proposalId), to the assignee."""
    return _decline_proposal(
        actor=actor,
        commitment_id=commitment_id,
        proposal_id=proposal_id,
        note=note,
        move="decline_extension",
        kind=ProposalKind.EXTENSION,
        action=AuditAction.EXTENSION_DECLINED,
        event=EventKind.EXTENSION_DECLINED,
    )


@_compare_and_set
def commitment_comment(*, actor: Actor, commitment_id: uuid.UUID, body: str) -> Comment:
    """Plain text on the timeline, by the assigner or the assignee (nobody
    else), in any status but Draft. CommentInvalid when blank or over
    COMMENT_MAX characters. Outbox `commented` (detail commentId), to the
    other person."""
    commitment = _read(pk=commitment_id)
    _check(commitment, actor=actor, move="comment")
    text = (body or "").strip()
    if is_blank(text):
        raise CommentInvalid("Write something to comment.")
    if len(text) > COMMENT_MAX:
        raise CommentInvalid(
            f"A comment is at most {COMMENT_MAX} characters; this one has {len(text)}."
        )
    now = timezone.now()
    comment = Comment(commitment=commitment, author=actor.user, body=text, created_at=now)
    _written(
        _record(
            commitment,
            changed=_touch(commitment, now),
            actor=actor,
            action=AuditAction.COMMENTED,
            previous_status=commitment.status,
            event=EventKind.COMMENTED,
            payload={"commentId": str(comment.pk)},
            detail={"commentId": str(comment.pk)},
            inserts=[comment],
            move="comment",
        )
    )
    return comment


@_compare_and_set
def commitment_withdraw(
    *, actor: Actor, commitment_id: uuid.UUID, reason: str = ""
) -> TransitionResult:
    """The assigner (or their tracker connection: an issue closed without
    being done) no longer needs it: Pending_Handshake, Active or Refused ->
    Withdrawn, an end state the Flow Score ignores. An open proposal is
    superseded. `reason` (at most NOTE_MAX characters) is kept on the audit
    row and in the outbox row's detail (`{"reason"}`, for the nudge). Outbox
    `withdrawn`, to the assignee (if there is one; a request to an address
    without an account stays as it was asked)."""
    commitment = _read(pk=commitment_id)
    _check(commitment, actor=actor, move="withdraw")
    now = timezone.now()
    previous, changed = _move(commitment, to=Status.WITHDRAWN, stamp_field="withdrawn_at", now=now)
    reason = _note_text(reason)
    _written(
        _record(
            commitment,
            changed=changed,
            actor=actor,
            action=AuditAction.WITHDRAWN,
            previous_status=previous,
            event=EventKind.WITHDRAWN,
            payload={"reason": reason} if reason else None,
            detail={"reason": reason} if reason else None,
            updates_where=_superseding(commitment, now=now),
            move="withdraw",
        )
    )
    return TransitionResult(commitment, previous, True)


def _id(value: Any) -> str | None:
    return str(value) if value is not None else None


@_compare_and_set
@transaction.atomic
def commitment_reassign(
    *, actor: Actor, commitment_id: uuid.UUID, assignee_email: str, note: str = ""
) -> TransitionResult:
    """The assigner hands a Pending_Handshake, Active or Refused commitment
    to someone else: an active account's verified address, or an address
    with no account, invited as `commitment_ask` does (its daily limit;
    AddressNotAskable for a closed account's address or over the limit).
    The new person is asked for a fresh handshake: Pending_Handshake, a new
    terms version, activated_at and refused_at cleared, an open proposal
    superseded; the external reference stays. ReassignInvalid for the
    person asked already, the assigner, or no address.

    Outbox `reassigned`, detail {"previousAssigneeId", "previousInvitationId",
    "assigneeId", "invitationId"} (ids or null): who was released, and who
    is asked now: a user (`assigneeId`), or an address with no account
    (`assigneeId` null, `invitationId` set, as `commitment.invitation`): then
    the nudge is the invitation mail. The audit row has the same, the new
    terms version, the note, and who is asked now as the page names them
    (`assigneeEmail`, `assigneeName`: the account's name then, "" for an
    address with no account)."""
    commitment = _read(pk=commitment_id)
    _check(commitment, actor=actor, move="reassign")
    email = (assignee_email or "").strip().lower()
    try:
        validate_email(email)
    except ValidationError:
        raise ReassignInvalid("Give the e-mail address of the person to ask.") from None
    assigner = commitment.assigner
    assignee = users_with_verified_primary_email().filter(email__iexact=email).first()
    if (assignee is not None and assignee.pk == assigner.pk) or email == assigner.email.lower():
        raise ReassignInvalid("You cannot reassign it to yourself: ask someone else.")
    if assignee is not None and assignee.pk == commitment.assignee_id:
        raise ReassignInvalid("It is asked of that person already.")
    invitation = None
    now = timezone.now()
    if assignee is None:
        waiting = commitment.invitation if commitment.assignee_id is None else None
        if waiting is not None and waiting.email == email:
            raise ReassignInvalid("It is asked of that address already.")
        if get_user_model().objects.filter(email__iexact=email, is_active=False).exists():
            raise AddressNotAskable("This address belongs to a closed account.")
        invitation = _invitation_for(assigner=assigner, email=email, now=now)
    # An invitation stays on a request its address's account claimed: it
    # names who was asked only while nobody has.
    previous_invitation = commitment.invitation_id if commitment.assignee_id is None else None
    detail = {
        "previousAssigneeId": _id(commitment.assignee_id),
        "previousInvitationId": _id(previous_invitation),
        "assigneeId": _id(assignee.pk if assignee else None),
        "invitationId": _id(invitation.pk if invitation else None),
    }
    commitment.assignee = assignee
    commitment.invitation = invitation
    commitment.activated_at = None
    commitment.refused_at = None
    commitment.terms_version += 1
    previous, changed = _move(
        commitment,
        to=Status.PENDING_HANDSHAKE,
        stamp_field=None,
        now=now,
        extra_fields=("assignee", "invitation", "activated_at", "refused_at", "terms_version"),
    )
    # Who is asked now, as the conversation names them (without a query a
    # row): the address, and an account's name as it was then.
    payload: dict[str, Any] = {
        **detail,
        "termsVersion": commitment.terms_version,
        "assigneeEmail": assignee.email if assignee is not None else email,
        "assigneeName": assignee.name if assignee is not None else "",
    }
    if note_text := _note_text(note):
        payload["note"] = note_text
    _written(
        _record(
            commitment,
            changed=changed,
            actor=actor,
            action=AuditAction.REASSIGNED,
            previous_status=previous,
            event=EventKind.REASSIGNED,
            payload=payload,
            detail=detail,
            updates_where=_superseding(commitment, now=now),
            move="reassign",
        )
    )
    return TransitionResult(commitment, previous, True)


# --- what a tracker connection records (commitments.machine, "Records") -------------


def _note(
    commitment: Commitment,
    *,
    actor: Actor,
    move: str,
    action: AuditAction,
    payload: dict[str, Any],
    fields: Sequence[str] = (),
) -> None:
    """Record on the commitment (read for `move`) what its source did, without a
    status move: the audit row, with `fields` and updated_at (so the Accord
    marks it changed), in one statement; no outbox row (nothing new to ask or
    to announce: the contract's events are the moves')."""
    commitment.updated_at = timezone.now()
    _written(
        _record(
            commitment,
            changed=["updated_at", *fields],
            actor=actor,
            action=action,
            previous_status=commitment.status,
            event=None,
            payload=payload,
            move=move,
        )
    )


@_compare_and_set
def commitment_record_source_deadline(
    *, actor: Actor, commitment_id: uuid.UUID, deadline: dt.datetime | None, words: str
) -> Commitment:
    """The source's due date changed after the handshake completed. The
    accepted deadline stays: terms change only by a new handshake
    (renegotiation is before one, docs/api.md "Statuses and moves"); the
    new date is recorded for both to see. NothingChanged when it is the
    accepted deadline already."""
    commitment = _read(pk=commitment_id)
    _check(commitment, actor=actor, move="record_source_deadline")
    if deadline == commitment.deadline:
        raise NothingChanged("The deadline is that already.")
    payload = {"deadline": _iso(deadline), "accepted": _iso(commitment.deadline), "words": words}
    _note(
        commitment,
        actor=actor,
        move="record_source_deadline",
        action=AuditAction.SOURCE_DEADLINE_CHANGED,
        payload=payload,
    )
    return commitment


@_compare_and_set
def commitment_external_ref_change(
    *, actor: Actor, commitment_id: uuid.UUID, external_id: str, link_url: str | None = UNSET
) -> Commitment:
    """The item it tracks has a new key (an issue moved to another project):
    the same commitment, its externalId (and link) updated, the old one in the
    audit row. DuplicateExternalRef when the assigner has another commitment
    with that externalId in the system."""
    commitment = _read(pk=commitment_id)
    _check(commitment, actor=actor, move="change_external_ref")
    if not commitment.has_external_ref:
        raise CommitmentError("It has no external reference to change.")
    payload: dict[str, Any] = {
        "externalSystem": commitment.external_system,
        "externalId": external_id,
        "previousExternalId": commitment.external_id,
    }
    commitment.external_id = external_id
    fields = ["external_id"]
    if link_url is not UNSET:
        commitment.link_url = link_url
        fields.append("link_url")
    try:
        with transaction.atomic():
            _note(
                commitment,
                actor=actor,
                move="change_external_ref",
                action=AuditAction.EXTERNAL_REF_CHANGED,
                payload=payload,
                fields=fields,
            )
    except IntegrityError as exc:
        raise DuplicateExternalRef() from exc
    return commitment
