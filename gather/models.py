"""Model keys: the language-model provider keys people store for capture
(POST /api/gather).

One key per (user, provider), encrypted at rest (lib.crypto); only its last
four characters are ever shown. One of a user's keys is their default: the
one gather uses.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from lib.crypto import EncryptedTextField, is_undecryptable

__all__ = ["ModelKey", "Provider"]

MODEL_MAX = 100


class Provider(models.TextChoices):
    OPENAI = "openai", "OpenAI"
    ANTHROPIC = "anthropic", "Anthropic"


class ModelKey(models.Model):
    """A user's own key for one provider, the model to call with it, and
    whether it is the one gather uses. A key no configured encryption key
    decrypts reads as `lib.crypto.Undecryptable`: shown as unreadable, never
    used (gather.selectors.model_key_for_gather)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="model_keys"
    )
    provider = models.CharField(max_length=16, choices=Provider.choices)
    key = EncryptedTextField()
    model = models.CharField(max_length=MODEL_MAX)
    is_default = models.BooleanField(default=False)
    last4 = models.CharField(max_length=4)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["provider"]
        constraints = [
            models.UniqueConstraint(fields=["user", "provider"], name="model_key_once_per_user"),
            # At most one default per user.
            models.UniqueConstraint(
                fields=["user"],
                condition=models.Q(is_default=True),
                name="model_key_one_default_per_user",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_provider_display()} key …{self.last4}"

    @property
    def unreadable(self) -> bool:
        """Stored under an encryption key that is no longer configured."""
        return is_undecryptable(self.key)

    @property
    def usable(self) -> bool:
        return isinstance(self.key, str) and bool(self.key)
