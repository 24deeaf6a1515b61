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


class AuditAction(models.TextChoices):
    """Every action an audit event may name: writers pass a member
    (`action=AuditAction.DECLINED`), readers match with one, and
    `audit.services.audit_event_build` refuses anything else, so a word is
    spelt once. The values are what the rows store: add a member for a new
    action; a value changes only with a migration that renames the stored
    rows' word with it (audit 0005 did, once). Grouped by the app that writes
    them."""

    # accounts: sign-ins, passwords, addresses (audit.receivers) and the profile
    USER_SIGNED_IN = "user_signed_in"
    USER_SIGN_IN_FAILED = "user_sign_in_failed"
    USER_PASSWORD_CHANGED = "user_password_changed"
    USER_PASSWORD_SET = "user_password_set"
    USER_PASSWORD_RESET = "user_password_reset"
    USER_EMAIL_ADDED = "user_email_added"
    USER_EMAIL_CONFIRMED = "user_email_confirmed"
    USER_EMAIL_PRIMARY_CHANGED = "user_email_primary_changed"
    USER_EMAIL_REMOVED = "user_email_removed"
    USER_PROFILE_CHANGED = "user_profile_changed"
    # accounts: the second factor (allauth.mfa's signals, audit.receivers)
    USER_SECOND_FACTOR_ADDED = "user_second_factor_added"
    USER_SECOND_FACTOR_REMOVED = "user_second_factor_removed"
    USER_RECOVERY_CODES_MADE = "user_recovery_codes_made"
    USER_SECOND_FACTOR_FAILED = "user_second_factor_failed"
    # an operator removed a person's second factor (manage.py remove_second_factor)
    SECOND_FACTOR_RESET_BY_OPERATOR = "second_factor_reset_by_operator"
    # accounts: single sign-on (audit.receivers; accounts.services for operators' commands)
    USER_SIGNED_IN_WITH_SSO = "user_signed_in_with_sso"
    SSO_PROVIDER_ADDED = "sso_provider_added"
    # staff in the admin (audit.admin_mixins) and its custom actions
    ADMIN_ADDED = "admin_added"
    ADMIN_CHANGED = "admin_changed"
    ADMIN_DELETED = "admin_deleted"
    ADMIN_CHANNEL_BROKEN_CLEARED = "admin_channel_broken_cleared"
    ADMIN_DELIVERY_RETRIED = "admin_delivery_retried"
    # commitments: creation and the moves (commitments.machine)
    CREATED = "created"
    DRAFT_CREATED = "draft_created"
    DRAFT_EDITED = "draft_edited"
    ASSIGNEE_JOINED = "assignee_joined"
    SENT_FOR_HANDSHAKE = "sent_for_handshake"
    ACCEPTED = "accepted"
    DECLINED = "declined"
    COMPLETED = "completed"
    RENEGOTIATED = "renegotiated"
    # commitments: the conversation (issue 26)
    PROPOSED = "proposed"
    PROPOSAL_ACCEPTED = "proposal_accepted"
    PROPOSAL_DECLINED = "proposal_declined"
    EXTENSION_REQUESTED = "extension_requested"
    EXTENSION_GRANTED = "extension_granted"
    EXTENSION_DECLINED = "extension_declined"
    COMMENTED = "commented"
    WITHDRAWN = "withdrawn"
    REASSIGNED = "reassigned"
    # commitments: what a tracker connection records, without a move
    # (CLOSED_NOT_DONE is retired: see RETIRED_ACTIONS)
    CLOSED_NOT_DONE = "closed_not_done"
    SOURCE_DEADLINE_CHANGED = "source_deadline_changed"
    EXTERNAL_REF_CHANGED = "external_ref_changed"
    # commitments: link templates
    LINK_TEMPLATE_ADDED = "link_template_added"
    LINK_TEMPLATE_DELETED = "link_template_deleted"
    # integrations: API tokens
    API_TOKEN_MINTED = "api_token_minted"
    API_TOKEN_REVOKED = "api_token_revoked"
    API_TOKEN_EXPIRED = "api_token_expired"
    # notifications: nudge channels
    NOTIFICATION_CHANNEL_SET = "notification_channel_set"
    NOTIFICATION_CHANNEL_BROKEN = "notification_channel_broken"
    NOTIFICATION_TEST_SENT = "notification_test_sent"
    # gather: model keys (`provider_key_*` before audit 0005 renamed the rows)
    MODEL_KEY_SET = "model_key_set"
    MODEL_KEY_REPLACED = "model_key_replaced"
    MODEL_KEY_MODEL_CHANGED = "model_key_model_changed"
    MODEL_KEY_MADE_DEFAULT = "model_key_made_default"
    MODEL_KEY_DELETED = "model_key_deleted"
    # webhooks
    WEBHOOK_ENDPOINT_CREATED = "webhook_endpoint_created"
    WEBHOOK_ENDPOINT_CHANGED = "webhook_endpoint_changed"
    WEBHOOK_ENDPOINT_PAUSED = "webhook_endpoint_paused"
    WEBHOOK_ENDPOINT_RESUMED = "webhook_endpoint_resumed"
    WEBHOOK_ENDPOINT_DELETED = "webhook_endpoint_deleted"
    WEBHOOK_SECRET_ROTATED = "webhook_secret_rotated"
    WEBHOOK_TEST_SENT = "webhook_test_sent"
    WEBHOOK_DELIVERY_REPLAYED = "webhook_delivery_replayed"
    # trackers: connections
    TRACKER_CONNECTION_ADDED = "tracker_connection_added"
    TRACKER_CONNECTION_SECRET_ROTATED = "tracker_connection_secret_rotated"
    TRACKER_CONNECTION_SECRET_REPLACED = "tracker_connection_secret_replaced"
    TRACKER_CONNECTION_IDENTITIES_CHANGED = "tracker_connection_identities_changed"
    TRACKER_CONNECTION_SITE_CHANGED = "tracker_connection_site_changed"
    TRACKER_CONNECTION_SITE_LEARNT = "tracker_connection_site_learnt"
    TRACKER_CONNECTION_DELETED = "tracker_connection_deleted"


# Members nothing writes any more, kept because old rows store them (a value
# is never removed): readers still word them. `closed_not_done` recorded an
# issue closed in its tracker without being done, the status kept; since
# issue 26 the tracker connection withdraws such a commitment instead
# (`withdrawn`). tests/audit/test_actions.py checks that nothing writes them
# and that every other member has a writer.
RETIRED_ACTIONS: frozenset[AuditAction] = frozenset({AuditAction.CLOSED_NOT_DONE})


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
        # Indexed by audit_user_time_idx, which leads with it.
        db_index=False,
    )
    # The token (or the tracker connection, for actor_kind "tracker") is named
    # by id, display prefix and name, not by a foreign key, so
    # the audit trail outlives a token and `audit` does not depend on
    # `integrations`. The name (as it was when the token acted) is what pages
    # show other people; the prefix is shown only to the token's owner.
    token_id = models.UUIDField(null=True, blank=True, db_index=True)
    # Indexed by audit_token_prefix_time_idx, which leads with it.
    token_prefix = models.CharField(max_length=32, blank=True)
    token_name = models.CharField(max_length=100, blank=True)
    # Indexed by the subject index below, which leads with it. Every index is
    # written on every event: none here that another already serves.
    subject_type = models.ForeignKey(
        ContentType, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    # Alone, for the admin's search by an exact id (subject, token or event).
    subject_id = models.UUIDField(db_index=True)
    subject = GenericForeignKey("subject_type", "subject_id")
    # Indexed by audit_action_time_idx, which leads with it.
    action = models.CharField(max_length=64)
    payload = models.JSONField(default=dict, blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["occurred_at", "id"]
        indexes = [
            models.Index(fields=["subject_type", "subject_id", "occurred_at"]),
            # The admin's list filtered by action or by kind of actor, newest
            # first: a page read off the index, whatever the table's size
            # (benchmarks/scale.py; a rare kind, such as system, otherwise
            # walked the whole occurred_at index).
            models.Index(fields=["action", "occurred_at", "id"], name="audit_action_time_idx"),
            models.Index(fields=["actor_kind", "occurred_at", "id"], name="audit_actor_time_idx"),
            # The admin's search by a person's e-mail (their user id) or by a
            # token's prefix, newest first: the page read off the index even
            # for an actor with millions of events (audit.admin).
            models.Index(fields=["user", "occurred_at", "id"], name="audit_user_time_idx"),
            # Of the events by a token only (a user's or the system's have no
            # prefix): a fraction of the trail's size.
            models.Index(
                fields=["token_prefix", "occurred_at", "id"],
                name="audit_token_prefix_time_idx",
                condition=~models.Q(token_prefix=""),
            ),
        ]
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
