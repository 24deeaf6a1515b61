"""Append-only audit trail.

An event names its subject generically (content type + UUID) so that `audit`
depends on no other app of the project; `commitments` writes events about
commitments through `audit.services`.

Append-only is enforced three times: the model refuses update and delete; on
PostgreSQL a trigger (migration 0002) rejects UPDATE and DELETE on the table;
and in production the service connects as a role that may only SELECT and
INSERT on it (`manage.py grant_service_role`), so it can neither TRUNCATE the
table nor drop the trigger.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models


class AppendOnlyError(Exception):
    """Raised on any attempt to change or remove an audit event."""


class ActorKind(models.TextChoices):
    USER = "user", "User"
    API_TOKEN = "api_token", "API token"
    SYSTEM = "system", "System"
    # A tracker connection (app `trackers`) acting for its owner: the row's
    # token_id is the connection's id and token_name its label as it was
    # ("GitHub connection “acme”").
    TRACKER = "tracker", "Tracker connection"


class AuditEventQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError("Audit events are append-only.")

    def delete(self):
        raise AppendOnlyError("Audit events are append-only.")

    def for_object(self, obj: models.Model) -> AuditEventQuerySet:
        return self.filter(subject_type=ContentType.objects.get_for_model(obj), subject_id=obj.pk)


class AuditEvent(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    occurred_at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor_kind = models.CharField(max_length=16, choices=ActorKind.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The acting user, or the token's owner for api_token events.",
    )
    # The token (or the tracker connection, for actor_kind "tracker") is named
    # by id, display prefix and name, not by a foreign key, so
    # the audit trail outlives a token and `audit` does not depend on
    # `integrations`. The name (as it was when the token acted) is what pages
    # show other people; the prefix is shown only to the token's owner.
    token_id = models.UUIDField(null=True, blank=True, db_index=True)
    token_prefix = models.CharField(max_length=32, blank=True, db_index=True)
    token_name = models.CharField(max_length=100, blank=True)
    subject_type = models.ForeignKey(ContentType, on_delete=models.PROTECT, related_name="+")
    subject_id = models.UUIDField(db_index=True)
    subject = GenericForeignKey("subject_type", "subject_id")
    action = models.CharField(max_length=64, db_index=True)
    payload = models.JSONField(default=dict, blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["occurred_at", "id"]
        indexes = [models.Index(fields=["subject_type", "subject_id", "occurred_at"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(actor_kind__in=[k.value for k in ActorKind]),
                name="audit_actor_kind_valid",
            ),
            models.CheckConstraint(
                condition=~models.Q(actor_kind="api_token") | models.Q(token_id__isnull=False),
                name="audit_api_token_has_token",
            ),
            models.CheckConstraint(
                condition=~models.Q(actor_kind="tracker") | models.Q(token_id__isnull=False),
                name="audit_tracker_has_connection",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} on {self.subject_id} by {self.actor_kind}"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise AppendOnlyError("Audit events are append-only.")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("Audit events are append-only.")
