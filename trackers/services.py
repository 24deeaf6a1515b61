"""Writes of the trackers app: connections (add, rotate the secret, edit the
identity map, delete) and what one authentic delivery does.

A delivery goes the inbox's own way: the contract's rules of a commitment's
terms (`commitments.terms`, which the inbox's serializer runs too) check what
the issue becomes, `commitments.services.commitment_create_pending` creates it
(audit row, outbox row: the same nudges and outbound webhooks), and
`commitment_complete` completes it. The actor is the owner through the
connection (`Actor.for_tracker`), with the rights of the owner's API token.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.timezones import zone_named
from audit.models import AuditAction
from audit.services import Actor, audit_event_record
from commitments import selectors as commitment_selectors
from commitments import services as commitment_services
from commitments.errors import CommitmentError, DuplicateExternalRef, NothingChanged
from commitments.machine import MOVES
from commitments.models import DESCRIPTION_MAX, EXTERNAL_ID_MAX, Commitment, Status
from commitments.terms import EXTERNAL_SYSTEM, TermsInvalid, terms_check
from integrations import selectors as integration_selectors
from lib.text import is_blank, strip_blank
from trackers import payloads
from trackers.kinds import Kind, tracker_for
from trackers.models import (
    EVENT_MAX,
    ISSUE_KEY_MAX,
    LOGIN_MAX,
    SITE_MAX,
    Outcome,
    TrackerConnection,
    TrackerEvent,
)
from trackers.outcomes import Action, Did, Receipt

if TYPE_CHECKING:
    from accounts.models import User

MAX_CONNECTIONS = 20
MAX_IDENTITIES = 500
ASSIGNEE_UNKNOWN = "no active account has this verified address"


class TrackerError(Exception):
    """Bad input for a connection; `field` names the form field it is about."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


SECRET_PREFIX = "trk_"


def secret_generate() -> str:
    """`trk_` and 64 hex characters, pasted as is into any tracker's secret
    field; the prefix lets secret scanners and the log filter (lib.redact)
    recognise one."""
    return SECRET_PREFIX + secrets.token_hex(32)


def _actor(connection: TrackerConnection, actor: Actor | None) -> Actor:
    return actor if actor is not None else Actor.for_user(connection.owner)


# --- input rules ---------------------------------------------------------------


def clean_kind(value: str) -> str:
    value = (value or "").strip().lower()
    if value not in Kind.values:
        raise TrackerError(f"Choose one of {', '.join(Kind.values)}.", field="kind")
    return value


def clean_system(value: str | None, *, kind: str) -> str:
    """The contract's rule for externalSystem (`commitments.terms`: trimmed,
    1..32 characters)."""
    value = kind if value is None or is_blank(value) else value
    try:
        return EXTERNAL_SYSTEM.clean(value)
    except TermsInvalid as exc:
        [problem, *_] = exc.problems[EXTERNAL_SYSTEM.name]
        raise TrackerError(f"externalSystem: {problem.message}", field="system") from None


_HOST_RE = re.compile(
    r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$"
)


def clean_site(value: str | None, *, kind: str) -> str:
    """The tracker's web host for a connection: `acme.atlassian.net`,
    `gitlab.example.com:8443`; an https address is taken for its host (and
    port). Blank: the tracker's own host where it has one (GitHub, Linear),
    else "" (learnt from the first delivery with a link)."""
    text = strip_blank(value or "").lower()
    if not text:
        return tracker_for(kind).default_site
    if "://" in text:
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError:
            parts, port = None, None
        if parts is None or parts.scheme != "https" or not parts.hostname:
            raise TrackerError(
                "Write the tracker's host (e.g. jira.example.com), or its https address.",
                field="site",
            )
        text = parts.hostname if port in (None, 443) else f"{parts.hostname}:{port}"
    text = text.removesuffix(":443")
    if len(text) > SITE_MAX or not _HOST_RE.match(text):
        raise TrackerError(
            f"“{text[:60]}” is not a host name (e.g. jira.example.com or gitlab.example.com:8443).",
            field="site",
        )
    return text


def parse_identity_lines(lines: list[str] | str) -> dict[str, str]:
    """`LOGIN=EMAIL` pairs (one per line in the form, one per --map) into the
    identity map. Names are kept as given and matched case-insensitively;
    addresses are stored lower-case. Blank lines are skipped."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    mapping: dict[str, str] = {}
    seen: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        line = strip_blank(raw)
        if not line:
            continue
        name, sep, email = line.rpartition("=")
        name, email = strip_blank(name), strip_blank(email).lower()
        where = f"Line {number} (“{line[:60]}”)"
        if not sep or not name or not email:
            raise TrackerError(f"{where}: write LOGIN=EMAIL.", field="identity_map")
        if len(name) > LOGIN_MAX:
            raise TrackerError(f"{where}: the name is too long.", field="identity_map")
        try:
            validate_email(email)
        except DjangoValidationError:
            raise TrackerError(
                f"{where}: “{email}” is not an e-mail address.", field="identity_map"
            ) from None
        if name.lower() in seen:
            raise TrackerError(f"{where}: “{name}” is mapped twice.", field="identity_map")
        seen.add(name.lower())
        mapping[name] = email
    if len(mapping) > MAX_IDENTITIES:
        raise TrackerError(f"At most {MAX_IDENTITIES} names.", field="identity_map")
    return mapping


# --- connections ---------------------------------------------------------------


def tracker_connection_add(
    *,
    owner: User,
    kind: str,
    system: str | None = None,
    identity_map: dict[str, str] | None = None,
    site: str | None = None,
    actor: Actor | None = None,
) -> tuple[TrackerConnection, str]:
    """Add a connection; returns it and its secret (shown once, stored encrypted)."""
    kind = clean_kind(kind)
    system = clean_system(system, kind=kind)
    site = clean_site(site, kind=kind)
    identity_map = parse_identity_lines([f"{k}={v}" for k, v in (identity_map or {}).items()])
    secret = secret_generate()
    taken = TrackerError(f"You have a connection for “{system}” already.", field="system")
    try:
        with transaction.atomic():
            # The owner's row, locked: one person's additions take turns, so
            # two at once cannot both pass the count.
            get_user_model().objects.select_for_update().filter(pk=owner.pk).exists()
            if TrackerConnection.objects.filter(owner=owner).count() >= MAX_CONNECTIONS:
                raise TrackerError(
                    f"You have {MAX_CONNECTIONS} connections, the most one person may have."
                )
            if TrackerConnection.objects.filter(owner=owner, system=system).exists():
                raise taken
            connection = TrackerConnection.objects.create(
                owner=owner,
                kind=kind,
                system=system,
                hook_id=secrets.token_urlsafe(24),
                secret=secret,
                identity_map=identity_map,
                site=site,
            )
            audit_event_record(
                actor=actor or Actor.for_user(owner),
                subject=connection,
                action=AuditAction.TRACKER_CONNECTION_ADDED,
                payload={
                    "kind": kind,
                    "system": system,
                    "identities": len(identity_map),
                    "site": site,
                },
            )
    except IntegrityError:
        raise taken from None
    return connection, secret


@transaction.atomic
def tracker_connection_rotate_secret(
    *, connection: TrackerConnection, actor: Actor | None = None
) -> str:
    """A new secret (shown once); the old one stops verifying at once."""
    secret = secret_generate()
    _secret_set(
        connection, secret, actor=actor, action=AuditAction.TRACKER_CONNECTION_SECRET_ROTATED
    )
    return secret


def _secret_set(
    connection: TrackerConnection, secret: str, *, actor: Actor | None, action: AuditAction
) -> None:
    connection.secret = secret
    connection.secret_rotated_at = timezone.now()
    connection.save(update_fields=["secret", "secret_rotated_at"])
    audit_event_record(
        actor=_actor(connection, actor),
        subject=connection,
        action=action,
        payload={"system": connection.system},
    )


SECRET_MIN = 16
SECRET_MAX = 200


@transaction.atomic
def tracker_connection_use_tracker_secret(
    *, connection: TrackerConnection, secret: str, actor: Actor | None = None
) -> None:
    """Verify with the secret the tracker made, where it makes its own and lets
    nobody choose it (Linear shows a signing secret on the webhook's page)."""
    secret = (secret or "").strip()
    if not SECRET_MIN <= len(secret) <= SECRET_MAX or any(ch.isspace() for ch in secret):
        raise TrackerError(
            f"Paste the tracker's signing secret ({SECRET_MIN} to {SECRET_MAX} characters, "
            "no spaces).",
            field="secret",
        )
    _secret_set(
        connection, secret, actor=actor, action=AuditAction.TRACKER_CONNECTION_SECRET_REPLACED
    )


@transaction.atomic
def tracker_connection_set_identity_map(
    *, connection: TrackerConnection, identity_map: dict[str, str], actor: Actor | None = None
) -> TrackerConnection:
    identity_map = parse_identity_lines([f"{k}={v}" for k, v in identity_map.items()])
    connection.identity_map = identity_map
    connection.save(update_fields=["identity_map"])
    audit_event_record(
        actor=_actor(connection, actor),
        subject=connection,
        action=AuditAction.TRACKER_CONNECTION_IDENTITIES_CHANGED,
        payload={"system": connection.system, "identities": len(identity_map)},
    )
    return connection


@transaction.atomic
def tracker_connection_set_site(
    *, connection: TrackerConnection, site: str, actor: Actor | None = None
) -> TrackerConnection:
    """Set the host whose https links the connection uses (`clean_site`)."""
    site = clean_site(site, kind=connection.kind)
    previous = connection.site
    connection.site = site
    connection.save(update_fields=["site"])
    audit_event_record(
        actor=_actor(connection, actor),
        subject=connection,
        action=AuditAction.TRACKER_CONNECTION_SITE_CHANGED,
        payload={"system": connection.system, "site": site, "previous": previous},
    )
    return connection


@transaction.atomic
def tracker_connection_delete(*, connection: TrackerConnection, actor: Actor | None = None) -> None:
    """Delete it and its event log; its commitments stay."""
    audit_event_record(
        actor=_actor(connection, actor),
        subject=connection,
        action=AuditAction.TRACKER_CONNECTION_DELETED,
        payload={"kind": connection.kind, "system": connection.system},
    )
    connection.delete()


# --- deliveries ----------------------------------------------------------------


def end_of_day(day: dt.date, tz_name: str) -> dt.datetime:
    """23:59:59 of `day` in the time zone `tz_name` (UTC when it is unknown)."""
    return dt.datetime.combine(day, dt.time(23, 59, 59), tzinfo=zone_named(tz_name))


# --- issue keys as externalIds ---------------------------------------------------------

# An externalId is 1..128 characters (the inbox's rule), an issue key may be
# longer (a GitHub owner of 39 and a repository of 100 characters), and a
# further assignee's id adds " (their e-mail)". Whatever does not fit is
# shortened the same way every time: its first characters, "~", and 16 hex
# characters of its SHA-256, so every later event of the issue finds the same
# commitment. Keys and ids that fit are kept as they are.
FIRST_ROOM = EXTERNAL_ID_MAX  # the first assignee's id: the key itself
KEY_ROOM = 100  # the key's part of a further assignee's id
DIGEST_CHARS = 16


def shortened(text: str, room: int) -> str:
    """`text` when it fits in `room` characters, else a stable form that does."""
    if len(text) <= room:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]
    return f"{text[: room - DIGEST_CHARS - 1]}~{digest}"


def first_external_id(key: str) -> str:
    return shortened(key, FIRST_ROOM)


def further_prefix(key: str) -> str:
    """What every further assignee's externalId of the issue starts with."""
    return f"{shortened(key, KEY_ROOM)} ("


def further_external_id(key: str, email: str) -> str:
    prefix = further_prefix(key)
    return f"{prefix}{shortened(email, EXTERNAL_ID_MAX - len(prefix) - 1)})"


def _external_id_for(key: str, external_id: str) -> str:
    """The externalId that `external_id`, made for an issue's old key, gets
    under its new `key`: the first one, or a further one (same e-mail part)."""
    if " (" in external_id and external_id.endswith(")"):
        email_part = external_id[external_id.index(" (") + 2 : -1]
        prefix = further_prefix(key)
        return f"{prefix}{shortened(email_part, EXTERNAL_ID_MAX - len(prefix) - 1)})"
    return first_external_id(key)


def _issue_commitments(connection: TrackerConnection, key: str) -> list[Commitment]:
    return commitment_selectors.commitments_for_external_item(
        assigner=connection.owner,
        external_system=connection.system,
        external_id=first_external_id(key),
        further_prefix=further_prefix(key),
    )


# --- links -----------------------------------------------------------------------------


def _link_host(url: str) -> str:
    """The https host (with a port, when not 443) of `url`; "" for anything
    else (http, another scheme, credentials in it, no host)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return ""
    if parts.scheme != "https" or not parts.hostname or parts.username or parts.password:
        return ""
    return parts.hostname if port in (None, 443) else f"{parts.hostname}:{port}"


# --- one delivery ----------------------------------------------------------------------


@dataclass
class _Delivery:
    """One delivery being applied: the connection, what it says, who acts,
    and the notes the log row gets beside its actions."""

    connection: TrackerConnection
    change: payloads.Change
    actor: Actor
    notes: list[str] = field(default_factory=list)
    _link: tuple[str | None] | None = None

    @property
    def tracker(self) -> str:
        return self.connection.get_kind_display()

    def link(self) -> str | None:
        """The issue's link when it is https on the connection's site (learnt
        from this delivery when the connection has none yet); else None, and
        the log says why. Worked out once per delivery."""
        if self._link is None:
            self._link = (self._checked_link(),)
        return self._link[0]

    def _checked_link(self) -> str | None:
        url = self.change.url
        if not url:
            return None
        host = _link_host(url)
        connection = self.connection
        if host and not connection.site and _site_learn(connection, host, actor=self.actor):
            self.notes.append(
                f"This connection's {self.tracker} site is now {connection.site}, from this "
                "delivery: issue links elsewhere are not used."
            )
        if host and host == connection.site:
            return url
        why = (
            "not a plain https address"
            if not host
            else f"not on {connection.site}, this connection's site"
        )
        self.notes.append(f"The issue's link {url} was not used ({why}).")
        return None


def _site_learn(connection: TrackerConnection, host: str, *, actor: Actor) -> bool:
    """Set a blank site to `host`, once: a delivery racing this one that set
    it first wins, and its value is the one used. True when this one set it."""
    won = TrackerConnection.objects.filter(pk=connection.pk, site="").update(site=host)
    if won:
        audit_event_record(
            actor=actor,
            subject=connection,
            action=AuditAction.TRACKER_CONNECTION_SITE_LEARNT,
            payload={"system": connection.system, "site": host},
        )
    connection.site = TrackerConnection.objects.values_list("site", flat=True).get(pk=connection.pk)
    return bool(won)


def _email_of(person: payloads.Person, identity_map: dict[str, str]) -> str | None:
    """The operator's map first (by the tracker's one identity field, any
    case), then the address the tracker sent."""
    if person.key:
        lowered = {name.lower(): email for name, email in identity_map.items()}
        if person.key.lower() in lowered:
            return lowered[person.key.lower()]
    return person.email


def _unmapped(kind: str, person: payloads.Person) -> str:
    field_name = tracker_for(kind).identity_field
    if not person.key:
        return f"the tracker sent no {field_name} and no e-mail"
    return (
        f"not in the identity map (map the {field_name} “{person.key}”), and the tracker "
        "sent no e-mail"
    )


def _day(value: dt.datetime | None, tz_name: str) -> str:
    return value.astimezone(zone_named(tz_name)).date().isoformat() if value else "none"


def _follow_move(delivery: _Delivery) -> list[Action]:
    """A moved issue keeps its commitments: when none is found under the key
    and some are under a key it had before (Jira's changelog, Linear's
    previousIdentifiers), they take the new key (and its link)."""
    change, connection = delivery.change, delivery.connection
    if not change.previous_keys or _issue_commitments(connection, change.key):
        return []
    actions: list[Action] = []
    for old_key in change.previous_keys:
        found = _issue_commitments(connection, old_key)
        if not found:
            continue
        link = delivery.link()
        for commitment in found:
            assert commitment.external_id is not None  # found by it
            new_id = _external_id_for(change.key, commitment.external_id)
            try:
                commitment_services.commitment_external_ref_change(
                    actor=delivery.actor,
                    commitment_id=commitment.pk,
                    external_id=new_id,
                    link_url=link,
                )
            except CommitmentError as exc:
                why = f"it could not take the new key {new_id}: {exc}"
                actions.append(_about(commitment, Did.KEPT, why))
                continue
            moved = _about(commitment, Did.MOVED, f"the issue is now {change.key}")
            actions.append(replace(moved, external_id=new_id))
        break
    return actions


def _assign(delivery: _Delivery) -> list[Action]:
    connection, change, actor = delivery.connection, delivery.change, delivery.actor
    owner = connection.owner
    existing = _issue_commitments(connection, change.key)
    taken_ids = {c.external_id for c in existing}
    by_assignee = {c.assignee_id: c for c in existing}
    wanted = [(p, _email_of(p, connection.identity_map)) for p in change.people]
    users = integration_selectors.users_by_email(emails=[e for _, e in wanted if e])
    deadline = end_of_day(change.due, owner.timezone) if change.due else None
    actions: list[Action] = []
    for person, email in wanted:
        tracker_user = person.key if person.key and person.key != person.shown else ""
        # What is said of this person, whatever is done: each outcome below is
        # this with its `did` and why.
        who = Action(who=person.shown, did=Did.SKIPPED, tracker_user=tracker_user)
        if email is None:
            actions.append(replace(who, why=_unmapped(connection.kind, person)))
            continue
        who = replace(who, email=email)
        user = users.get(email)
        if user is None or not user.can_receive:
            actions.append(replace(who, why=ASSIGNEE_UNKNOWN))
            continue
        if user.pk in by_assignee:
            found = by_assignee[user.pk]
            why = f"a commitment for this issue exists already ({found.get_status_display()})"
            actions.append(replace(who, did=Did.KEPT, why=why, commitment_id=str(found.pk)))
            continue
        first = first_external_id(change.key)
        external_id = first if first not in taken_ids else further_external_id(change.key, email)
        try:
            agreed = terms_check(
                description=change.title[:DESCRIPTION_MAX],
                deadline=deadline,
                external_system=connection.system,
                external_id=external_id,
            )
        except TermsInvalid as exc:
            actions.append(replace(who, why=exc.said))
            continue
        try:
            commitment = commitment_services.commitment_create_pending(
                actor=actor,
                assigner=owner,
                assignee=user,
                description=agreed.description,
                deadline=agreed.deadline,
                external_system=agreed.external_system,
                external_id=agreed.external_id,
                link_url=delivery.link(),
            )
        except DuplicateExternalRef:
            why = f"a commitment with externalId {external_id} exists already"
            actions.append(replace(who, did=Did.KEPT, why=why))
            continue
        taken_ids.add(external_id)
        by_assignee[user.pk] = commitment
        past_due = deadline is not None and deadline < commitment.created_at
        actions.append(
            replace(
                who,
                did=Did.CREATED,
                commitment_id=str(commitment.pk),
                external_id=external_id,
                past_due=_day(deadline, owner.timezone) if past_due else "",
            )
        )
    return actions


def _not_moving(commitment: Commitment) -> Action | None:
    """Why a commitment that cannot be moved now is left as it is (None when
    it can be)."""
    reasons: dict[str, str] = {
        Status.COMPLETED: "it was completed already",
        Status.REFUSED: "it was declined",
        Status.WITHDRAWN: "it was withdrawn",
        Status.DRAFT: "it is a draft",
    }
    why = reasons.get(commitment.status)
    return _about(commitment, Did.KEPT, why) if why else None


def _about(commitment: Commitment, did: Did, why: str = "") -> Action:
    """An action on one of the issue's commitments."""
    assert commitment.external_id is not None  # found by it
    return Action(who=commitment.external_id, commitment_id=str(commitment.pk), did=did, why=why)


def _close(delivery: _Delivery) -> list[Action]:
    existing = _issue_commitments(delivery.connection, delivery.change.key)
    actions: list[Action] = []
    for commitment in existing:
        stays = _not_moving(commitment)
        if stays is not None:
            actions.append(stays)
            continue
        if commitment.status != Status.ACTIVE:
            why = f"it is not accepted yet ({commitment.get_status_display()})"
            actions.append(_about(commitment, Did.KEPT, why))
            continue
        try:
            commitment_services.commitment_complete(
                actor=delivery.actor, commitment_id=commitment.pk
            )
        except CommitmentError as exc:  # changed under us since it was read
            actions.append(_about(commitment, Did.KEPT, str(exc)))
            continue
        actions.append(_about(commitment, Did.COMPLETED))
    return actions


def _not_done(delivery: _Delivery) -> list[Action]:
    """Closed without being done (not planned, canceled, won't do): not a kept
    commitment, so nothing is completed; the assigner no longer needs it, so
    each commitment of the issue still open (waiting, accepted or declined)
    is withdrawn, the tracker's words its reason (its timeline says so)."""
    change = delivery.change
    words = f"Closed in {delivery.tracker} {change.closed_as}"
    existing = _issue_commitments(delivery.connection, change.key)
    actions: list[Action] = []
    for commitment in existing:
        if commitment.status not in MOVES["withdraw"].from_statuses:
            stays = _not_moving(commitment)
            assert stays is not None  # every status withdraw cannot leave stays
            actions.append(stays)
            continue
        try:
            commitment_services.commitment_withdraw(
                actor=delivery.actor, commitment_id=commitment.pk, reason=words
            )
        except CommitmentError as exc:
            actions.append(_about(commitment, Did.KEPT, str(exc)))
            continue
        actions.append(_about(commitment, Did.WITHDRAWN, f"{words}: withdrawn"))
    return actions


def _due(delivery: _Delivery) -> list[Action]:
    """The due date changed in the tracker: a change of terms by the assigner.
    Before the handshake completed (Pending_Handshake, Refused) that is a
    renegotiation (the assignee is asked again); once accepted, the accepted
    deadline stays and the new date is recorded on the commitment."""
    connection, change = delivery.connection, delivery.change
    tz_name = connection.owner.timezone
    deadline = end_of_day(change.due, tz_name) if change.due else None
    now_due = f"is now {change.due.isoformat()}" if change.due else "was removed"
    actions: list[Action] = []
    for commitment in _issue_commitments(connection, change.key):
        actions.append(_due_one(delivery, commitment, deadline=deadline, now_due=now_due))
    return actions


def _due_one(
    delivery: _Delivery, commitment: Commitment, *, deadline: dt.datetime | None, now_due: str
) -> Action:
    tz_name = delivery.connection.owner.timezone
    try:
        if commitment.status in (Status.PENDING_HANDSHAKE, Status.REFUSED):
            commitment_services.commitment_renegotiate(
                actor=delivery.actor, commitment_id=commitment.pk, deadline=deadline
            )
            why = f"the due date {now_due}: the assignee is asked again"
            return _about(commitment, Did.RENEGOTIATED, why)
        if commitment.status == Status.ACTIVE:
            words = (
                f"The due date in {delivery.tracker} {now_due}; "
                f"the accepted deadline ({_day(commitment.deadline, tz_name)}) stays"
            )
            commitment_services.commitment_record_source_deadline(
                actor=delivery.actor,
                commitment_id=commitment.pk,
                deadline=deadline,
                words=words,
            )
            return _about(commitment, Did.NOTED, words)
    except NothingChanged:
        return _about(commitment, Did.KEPT, "its deadline is that already")
    except CommitmentError as exc:  # changed under us since it was read
        return _about(commitment, Did.KEPT, str(exc))
    stays = _not_moving(commitment)
    assert stays is not None  # every other status is one that stays
    return stays


NOTHING_FOR = {
    payloads.REOPENED: "Reopened: nothing done (a completed commitment stays completed).",
    payloads.UNASSIGNED: "Unassigned: nothing done (the assignee's commitment stays as it is).",
}


def _apply(connection: TrackerConnection, change: payloads.Change, actor: Actor) -> Receipt:
    delivery = _Delivery(connection, change, actor)
    actions = _follow_move(delivery)
    if change.due_changed:
        actions += _due(delivery)
    if change.action == payloads.ASSIGNED:
        actions += _assign(delivery)
        if not actions:
            delivery.notes.insert(0, "Assigned, but to nobody we can name.")
    elif change.action == payloads.CLOSED:
        actions += _close(delivery)
        if not actions:
            delivery.notes.insert(0, "Closed: no commitment tracks this issue.")
    elif change.action == payloads.NOT_DONE:
        actions += _not_done(delivery)
        if not actions:
            delivery.notes.insert(0, f"Closed {change.closed_as}: no commitment tracks this issue.")
    elif not actions:
        if change.due_changed:
            delivery.notes.insert(0, "The due date changed: no commitment tracks this issue.")
        else:
            delivery.notes.insert(
                0, NOTHING_FOR.get(change.action) or change.note or "Nothing to do."
            )
    changed = any(a.did.changes for a in actions)
    return Receipt(
        Outcome.CHANGED if changed else Outcome.NOTHING,
        " ".join([*(a.sentence() for a in actions), *delivery.notes]),
        event=change.event,
        external_id=change.key,
        actions=tuple(actions),
    )


@transaction.atomic
def tracker_delivery_receive(
    *,
    connection: TrackerConnection,
    delivery_id: str,
    change: payloads.Change | None,
    why: str = "",
    body_sha256: str | None = None,
    unread: str = "",
) -> Receipt:
    """Do what one authentic delivery asks, once: its log row is written first,
    unique per connection by delivery id and by the body's SHA-256, so a
    redelivery, or the same body replayed under a fresh delivery id (the id is
    not signed), even one racing the first, does nothing and says so.
    `change` None: the body could not be read as an issue event (`why`), or
    was not read at all (`unread`, the whole summary: too large); it is logged
    and nothing else is done."""
    try:
        with transaction.atomic():
            row = TrackerEvent.objects.create(
                connection=connection,
                delivery_id=delivery_id,
                body_sha256=body_sha256,
                outcome=Outcome.NOTHING,
                summary="",
            )
    except IntegrityError:
        return _received_before(connection, delivery_id=delivery_id, body_sha256=body_sha256)
    if change is None:
        receipt = Receipt(Outcome.NOTHING, unread or f"Not an issue event we can read: {why}.")
    else:
        actor = Actor.for_tracker(
            user=connection.owner, connection_id=connection.pk, label=connection.label
        )
        receipt = _apply(connection, change, actor)
    row.event = receipt.event[:EVENT_MAX]
    row.external_id = receipt.external_id[:ISSUE_KEY_MAX]
    row.outcome = receipt.outcome
    row.summary = receipt.summary
    row.actions = receipt.actions_json()
    row.save(update_fields=["event", "external_id", "outcome", "summary", "actions"])
    return receipt


def _received_before(
    connection: TrackerConnection, *, delivery_id: str, body_sha256: str | None
) -> Receipt:
    """The answer to a delivery whose id or body the connection has had."""
    same = Q(delivery_id=delivery_id)
    if body_sha256:
        same |= Q(body_sha256=body_sha256)
    first = TrackerEvent.objects.filter(same, connection=connection).order_by("id").first()
    said = f" It did: {first.summary}" if first and first.summary else ""
    if first is None or first.delivery_id == delivery_id:
        summary = f"Delivery {delivery_id} was received before; nothing done again.{said}"
    else:
        summary = (
            f"This body was received before, as delivery {first.delivery_id}: a replay under "
            f"another delivery id ({delivery_id}) is refused; nothing done again.{said}"
        )
    return Receipt(Outcome.NOTHING, summary, redelivery=True)
