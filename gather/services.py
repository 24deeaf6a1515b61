"""Writes of gather: the model keys people store for capture (a user's own
OpenAI or Anthropic key), and saving the capture page's chosen drafts as
`Draft` commitments through the commitments service (POST /api/gather itself
writes nothing). Reads of the keys are in gather.selectors, the error in
gather.errors.

A key is stored encrypted (gather.models.ModelKey.key) with its last four
characters beside it for display; the audit trail records that a key was
set, replaced or deleted, never the key (actions `model_key_*`; rows written
before audit 0005 said `provider_key_*` and were renamed with it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from audit.models import AuditAction
from audit.services import Actor, audit_event_record
from commitments.models import Commitment
from commitments.services import commitment_create_draft
from gather.errors import ModelKeyError
from gather.models import MODEL_MAX, ModelKey, Provider

if TYPE_CHECKING:
    from accounts.models import User

__all__ = [
    "capture_drafts_save",
    "model_key_change_model",
    "model_key_delete",
    "model_key_make_default",
    "model_key_set",
]

KEY_MAX = 1000


def _provider(provider: str) -> str:
    if provider not in Provider.values:
        choices = " or ".join(Provider.values)
        raise ModelKeyError(f"Unknown provider {provider!r}: choose {choices}.", field="provider")
    return provider


def _actor(user: User, actor: Actor | None) -> Actor:
    return actor if actor is not None else Actor.for_user(user)


def _lock_keys_of(user: User) -> None:
    """Serialise changes to one person's keys (their user row, locked until the
    transaction ends), so two at once cannot both insert a key for one
    provider or both claim the default."""
    list(get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk"))


def _make_default(user: User, key: ModelKey) -> None:
    # The one-default-per-user constraint: clear the others first.
    ModelKey.objects.filter(user=user, is_default=True).exclude(pk=key.pk).update(is_default=False)
    if not key.is_default:
        key.is_default = True
        key.save(update_fields=["is_default", "updated_at"])


def model_key_set(
    *, user: User, provider: str, key: str, model: str | None = None, actor: Actor | None = None
) -> ModelKey:
    """Store (or replace) the user's key for `provider`, with `model` (None or
    blank: settings.GATHER_DEFAULT_MODELS[provider]). The newest stored key
    becomes the user's default."""
    provider = _provider(provider)
    key = (key or "").strip()
    if not key:
        raise ModelKeyError("The key is empty.")
    if len(key) > KEY_MAX or any(ch.isspace() for ch in key):
        raise ModelKeyError("That does not look like an API key.")
    model = (model or "").strip() or settings.GATHER_DEFAULT_MODELS[provider]
    if len(model) > MODEL_MAX:
        raise ModelKeyError(f"A model name has at most {MODEL_MAX} characters.", field="model")
    with transaction.atomic():
        _lock_keys_of(user)
        existing = ModelKey.objects.select_for_update().filter(user=user, provider=provider)
        stored = existing.first()
        replaced = stored is not None
        if stored is None:
            stored = ModelKey(user=user, provider=provider)
        stored.key, stored.model, stored.last4 = key, model, key[-4:]
        stored.save()
        _make_default(user, stored)
        audit_event_record(
            actor=_actor(user, actor),
            subject=stored,
            action=AuditAction.MODEL_KEY_REPLACED if replaced else AuditAction.MODEL_KEY_SET,
            payload={"provider": provider, "model": model},
        )
    return stored


def model_key_change_model(
    *, user: User, provider: str, model: str | None, actor: Actor | None = None
) -> ModelKey:
    """Call another model with the stored key (None or blank: the default model)."""
    provider = _provider(provider)
    model = (model or "").strip() or settings.GATHER_DEFAULT_MODELS[provider]
    if len(model) > MODEL_MAX:
        raise ModelKeyError(f"A model name has at most {MODEL_MAX} characters.", field="model")
    with transaction.atomic():
        _lock_keys_of(user)
        stored = ModelKey.objects.select_for_update().get(user=user, provider=provider)
        old = stored.model
        if old != model:
            stored.model = model
            stored.save(update_fields=["model", "updated_at"])
            audit_event_record(
                actor=_actor(user, actor),
                subject=stored,
                action=AuditAction.MODEL_KEY_MODEL_CHANGED,
                payload={"provider": provider, "model": {"old": old, "new": model}},
            )
    return stored


def model_key_delete(*, user: User, provider: str, actor: Actor | None = None) -> bool:
    """Delete the user's key for `provider`; False when there was none. When
    it was the default, the other stored key (if any) becomes the default."""
    provider = _provider(provider)
    with transaction.atomic():
        _lock_keys_of(user)
        stored = ModelKey.objects.select_for_update().filter(user=user, provider=provider).first()
        if stored is None:
            return False
        audit_event_record(
            actor=_actor(user, actor),
            subject=stored,
            action=AuditAction.MODEL_KEY_DELETED,
            payload={"provider": provider},
        )
        was_default = stored.is_default
        stored.delete()
        if was_default:
            other = ModelKey.objects.filter(user=user).order_by("-updated_at").first()
            if other is not None:
                _make_default(user, other)
    return True


def model_key_make_default(*, user: User, provider: str, actor: Actor | None = None) -> ModelKey:
    """Make the user's key for `provider` the one gather uses (ModelKey.DoesNotExist
    when there is none)."""
    provider = _provider(provider)
    with transaction.atomic():
        _lock_keys_of(user)
        stored = ModelKey.objects.select_for_update().get(user=user, provider=provider)
        if not stored.is_default:
            _make_default(user, stored)
            audit_event_record(
                actor=_actor(user, actor),
                subject=stored,
                action=AuditAction.MODEL_KEY_MADE_DEFAULT,
                payload={"provider": provider},
            )
    return stored


@transaction.atomic
def capture_drafts_save(
    *, actor: Actor, drafts: Iterable[dict[str, Any]], raw_text: str
) -> list[Commitment]:
    """Save each draft (`assignee`, `description`, `deadline`) as a Draft
    commitment of the actor's, the pasted text kept in raw_text: all of them or,
    when one fails, none. Nobody is notified until a draft is sent."""
    return [
        commitment_create_draft(
            actor=actor,
            assignee=draft["assignee"],
            description=draft["description"],
            deadline=draft.get("deadline"),
            raw_text=raw_text,
        )
        for draft in drafts
    ]
