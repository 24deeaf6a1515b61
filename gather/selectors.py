"""Reads for capture. The people a draft may name are the collaborators of
`commitments.selectors` (the New commitment page suggests the same ones); the
model keys a person stored, and the one gather uses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from commitments.selectors import Collaborator, collaborators_for
from gather.models import ModelKey

if TYPE_CHECKING:
    from accounts.models import User

__all__ = ["Collaborator", "collaborators_for", "model_key_for_gather", "model_keys_of"]


def model_keys_of(*, user: User) -> list[ModelKey]:
    return list(ModelKey.objects.filter(user=user).order_by("provider"))


def model_key_for_gather(*, user: User) -> ModelKey | None:
    """The key gather uses: the user's default, or when that one cannot be
    read (stored under an encryption key no longer configured), their other
    readable key; None when they have no usable key."""
    for stored in ModelKey.objects.filter(user=user).order_by("-is_default", "-updated_at"):
        if stored.usable:
            return stored
    return None
