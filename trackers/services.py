"""Writes of the trackers app: connections (add, rotate the secret, edit the
identity map, delete) and what one authentic delivery does.

A delivery goes through the inbox's own path: the inbox serializer validates
what the issue becomes, `commitments.services.commitment_create_pending`
creates it (audit row, outbox row: the same nudges and outbound webhooks), and
`commitment_complete` completes it. The actor is the owner through the
connection (`Actor.for_tracker`), with the rights of the owner's API token.
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from rest_framework import serializers

from accounts.timezones import zone_named
from audit.services import Actor, audit_event_record
from commitments import selectors as commitment_selectors
from commitments import services as commitment_services
from commitments.errors import CommitmentError, DuplicateExternalRef
from commitments.models import DESCRIPTION_MAX, EXTERNAL_ID_MAX, Status
from integrations import selectors as integration_selectors
from integrations.serializers import InboxSerializer
from lib.api_errors import flatten_errors
from lib.text import is_blank, strip_blank
from trackers import payloads
from trackers.models import (
    EVENT_MAX,
    LOGIN_MAX,
    Kind,
    Outcome,
    TrackerConnection,
    TrackerEvent,
)

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
    """The inbox's own rule for externalSystem (trimmed, 1..32 characters)."""
    value = kind if value is None or is_blank(value) else value
    field_rule = InboxSerializer().fields["externalSystem"]
    try:
        return field_rule.run_validation(value)
    except serializers.ValidationError as exc:
        raise TrackerError(f"externalSystem: {exc.detail[0]}", field="system") from None


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
    owner,
    kind: str,
    system: str | None = None,
    identity_map: dict[str, str] | None = None,
    actor: Actor | None = None,
) -> tuple[TrackerConnection, str]:
    """Add a connection; returns it and its secret (shown once, stored encrypted)."""
    kind = clean_kind(kind)
    system = clean_system(system, kind=kind)
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
            )
            audit_event_record(
                actor=actor or Actor.for_user(owner),
                subject=connection,
                action="tracker_connection_added",
                payload={"kind": kind, "system": system, "identities": len(identity_map)},
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
    _secret_set(connection, secret, actor=actor, action="tracker_connection_secret_rotated")
    return secret


def _secret_set(connection: TrackerConnection, secret: str, *, actor, action: str) -> None:
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
    _secret_set(connection, secret, actor=actor, action="tracker_connection_secret_replaced")


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
        action="tracker_connection_identities_changed",
        payload={"system": connection.system, "identities": len(identity_map)},
    )
    return connection


@transaction.atomic
def tracker_connection_delete(*, connection: TrackerConnection, actor: Actor | None = None) -> None:
    """Delete it and its event log; its commitments stay."""
    audit_event_record(
        actor=_actor(connection, actor),
        subject=connection,
        action="tracker_connection_deleted",
        payload={"kind": connection.kind, "system": connection.system},
    )
    connection.delete()


# --- deliveries ----------------------------------------------------------------


@dataclass
class Receipt:
    """What a delivery did: the answer to the tracker and the log row's text."""

    outcome: str
    summary: str
    event: str = ""
    external_id: str = ""
    actions: list[dict[str, Any]] = field(default_factory=list)
    redelivery: bool = False

    @property
    def changed(self) -> bool:
        return self.outcome == Outcome.CHANGED and not self.redelivery


def end_of_day(day: dt.date, tz_name: str) -> dt.datetime:
    """23:59:59 of `day` in the time zone `tz_name` (UTC when it is unknown)."""
    return dt.datetime.combine(day, dt.time(23, 59, 59), tzinfo=zone_named(tz_name))


def _email_of(person: payloads.Person, identity_map: dict[str, str]) -> str | None:
    if person.email:
        return person.email
    lowered = {name.lower(): email for name, email in identity_map.items()}
    for name in person.names:
        if name.lower() in lowered:
            return lowered[name.lower()]
    return None


def _assign(connection: TrackerConnection, change: payloads.Change, actor: Actor) -> list[dict]:
    owner = connection.owner
    existing = commitment_selectors.commitments_for_external_item(
        assigner=owner, external_system=connection.system, key=change.key
    )
    taken_ids = {c.external_id for c in existing}
    by_assignee = {c.assignee_id: c for c in existing}
    wanted = [(p, _email_of(p, connection.identity_map)) for p in change.people]
    users = integration_selectors.users_by_email(emails=[e for _, e in wanted if e])
    deadline = end_of_day(change.due, owner.timezone) if change.due else None
    actions: list[dict] = []
    for person, email in wanted:
        entry: dict[str, Any] = {"who": person.shown}
        actions.append(entry)
        if email is None:
            entry.update(
                did="skipped", why="not in the identity map, and the tracker sent no e-mail"
            )
            continue
        entry["email"] = email
        user = users.get(email)
        if user is None or not user.can_receive:
            entry.update(did="skipped", why=ASSIGNEE_UNKNOWN)
            continue
        if user.pk in by_assignee:
            found = by_assignee[user.pk]
            entry.update(
                did="kept",
                why=f"a commitment for this issue exists already ({found.get_status_display()})",
                commitmentId=str(found.pk),
            )
            continue
        external_id = change.key if change.key not in taken_ids else f"{change.key} ({email})"
        inbox = InboxSerializer(
            data={
                "assignerEmail": owner.email,
                "assigneeEmail": email,
                "description": change.title[:DESCRIPTION_MAX],
                "deadline": deadline.isoformat() if deadline else None,
                "externalSystem": connection.system,
                "externalId": external_id,
            }
        )
        if not inbox.is_valid():
            problems = flatten_errors(inbox.errors)
            entry.update(did="skipped", why="; ".join(f"{k}: {v}" for k, v in problems.items()))
            continue
        data = inbox.validated_data
        try:
            commitment = commitment_services.commitment_create_pending(
                actor=actor,
                assigner=owner,
                assignee=user,
                description=data["description"],
                deadline=data["deadline"],
                external_system=data["externalSystem"],
                external_id=data["externalId"],
                link_url=change.url,
            )
        except DuplicateExternalRef:
            entry.update(
                did="kept", why=f"a commitment with externalId {external_id} exists already"
            )
            continue
        taken_ids.add(external_id)
        by_assignee[user.pk] = commitment
        entry.update(did="created", commitmentId=str(commitment.pk), externalId=external_id)
    return actions


def _close(connection: TrackerConnection, change: payloads.Change, actor: Actor) -> list[dict]:
    existing = commitment_selectors.commitments_for_external_item(
        assigner=connection.owner, external_system=connection.system, key=change.key
    )
    actions: list[dict] = []
    for commitment in existing:
        entry: dict[str, Any] = {"who": commitment.external_id, "commitmentId": str(commitment.pk)}
        actions.append(entry)
        if commitment.status != Status.ACTIVE:
            why = {
                Status.COMPLETED: "it was completed already",
                Status.REFUSED: "it was declined",
            }.get(commitment.status, f"it is not accepted yet ({commitment.get_status_display()})")
            entry.update(did="kept", why=why)
            continue
        try:
            commitment_services.commitment_complete(actor=actor, commitment_id=commitment.pk)
        except CommitmentError as exc:  # changed under us since it was read
            entry.update(did="kept", why=str(exc))
            continue
        entry.update(did="completed")
    return actions


def _sentence(entry: dict[str, Any]) -> str:
    who = entry.get("who", "")
    if entry["did"] == "created":
        return f"Created a commitment for {who} ({entry.get('email')})."
    if entry["did"] == "completed":
        return f"Completed {who}."
    return f"{entry['did'].capitalize()} {who}: {entry.get('why', '')}."


NOTHING_FOR = {
    payloads.REOPENED: "Reopened: nothing done (a completed commitment stays completed).",
    payloads.UNASSIGNED: "Unassigned: nothing done (the assignee's commitment stays as it is).",
}


def _apply(connection: TrackerConnection, change: payloads.Change, actor: Actor) -> Receipt:
    base = {"event": change.event, "external_id": change.key}
    if change.action == payloads.ASSIGNED:
        actions = _assign(connection, change, actor)
        if not actions:
            return Receipt(Outcome.NOTHING, "Assigned, but to nobody we can name.", **base)
    elif change.action == payloads.CLOSED:
        actions = _close(connection, change, actor)
        if not actions:
            return Receipt(Outcome.NOTHING, "Closed: no commitment tracks this issue.", **base)
    else:
        summary = NOTHING_FOR.get(change.action) or (change.note or "Nothing to do.")
        return Receipt(Outcome.NOTHING, summary, **base)
    changed = any(a["did"] in ("created", "completed") for a in actions)
    return Receipt(
        Outcome.CHANGED if changed else Outcome.NOTHING,
        " ".join(_sentence(a) for a in actions),
        actions=actions,
        **base,
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
    row.external_id = receipt.external_id[:EXTERNAL_ID_MAX]
    row.outcome = receipt.outcome
    row.summary = receipt.summary
    row.actions = receipt.actions
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
