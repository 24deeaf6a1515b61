from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import models

from audit.models import ActorKind, AuditAction, AuditEvent


@dataclass(frozen=True)
class Actor:
    """Who did something: a user, a user through one of their API tokens or
    tracker connections (`token_id` is then the connection's id, `token_name`
    its label), or the system."""

    kind: str
    user: Any = None  # the user model (accounts sits above audit: not imported here)
    token_id: uuid.UUID | None = None
    token_prefix: str = ""
    token_name: str = ""

    @classmethod
    def for_user(cls, user: Any) -> Actor:
        return cls(kind=ActorKind.USER, user=user)

    @classmethod
    def for_token(
        cls, *, user: Any, token_id: uuid.UUID, token_prefix: str = "", token_name: str = ""
    ) -> Actor:
        return cls(
            kind=ActorKind.API_TOKEN,
            user=user,
            token_id=token_id,
            token_prefix=token_prefix,
            token_name=token_name,
        )

    @classmethod
    def for_tracker(cls, *, user: Any, connection_id: uuid.UUID, label: str) -> Actor:
        """The owner of a tracker connection, through it (the assigner's rights,
        like the owner's API token)."""
        return cls(kind=ActorKind.TRACKER, user=user, token_id=connection_id, token_name=label)

    @classmethod
    def system(cls) -> Actor:
        return cls(kind=ActorKind.SYSTEM)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": str(self.kind),
            "userId": str(self.user.pk) if self.user else None,
        }
        if self.kind == ActorKind.API_TOKEN:
            data["tokenId"] = str(self.token_id)
        elif self.kind == ActorKind.TRACKER:
            data["connectionId"] = str(self.token_id)
        return data


# AuditAction.values is a list made again at each read.
_ACTIONS = frozenset(AuditAction.values)


class UnknownAuditAction(ValueError):
    """An action that is not an `AuditAction`: a programming error, raised
    before anything is written."""


def audit_event_build(
    *,
    actor: Actor,
    subject: models.Model,
    action: AuditAction,
    payload: dict[str, Any] | None = None,
) -> AuditEvent:
    """One audit event, not yet written: for a caller that writes it together
    with the change it records (lib.db.write_together, one statement).
    Every write passes here, so an action outside `AuditAction` (a bare
    string typed past the type checker) is refused at once."""
    if action not in _ACTIONS:
        raise UnknownAuditAction(
            f"{action!r} is not an audit action: add it to audit.models.AuditAction."
        )
    return AuditEvent(
        actor_kind=actor.kind,
        user=actor.user,
        token_id=actor.token_id,
        token_prefix=actor.token_prefix,
        token_name=actor.token_name,
        subject_type=ContentType.objects.get_for_model(subject),
        subject_id=subject.pk,
        action=AuditAction(action),
        payload=payload or {},
    )


def audit_event_record(
    *,
    actor: Actor,
    subject: models.Model,
    action: AuditAction,
    payload: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one audit event. Call it inside the transaction of the change it records."""
    event = audit_event_build(actor=actor, subject=subject, action=action, payload=payload)
    event.save(force_insert=True)
    return event
