"""Tracker connections: a GitHub, GitLab, Linear or Jira webhook that creates
and completes its owner's commitments, and the log of what each delivery did.

The secret is made by the service and shown once; it is stored encrypted
(lib.crypto), not as a digest, because checking an HMAC needs the plaintext.
The receiving URL carries `hook_id`, random and unguessable; the secret, not
the URL, is what proves a delivery authentic.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from commitments.models import EXTERNAL_SYSTEM_MAX
from lib.crypto import EncryptedTextField, is_undecryptable
from trackers.kinds import Kind

DELIVERY_ID_MAX = 200
EVENT_MAX = 100
LOGIN_MAX = 200
SITE_MAX = 255
# The issue's key as the tracker shows it, whole: a commitment's externalId
# is at most EXTERNAL_ID_MAX and may hold a shortened form (trackers.services).
ISSUE_KEY_MAX = 500


class TrackerConnection(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tracker_connections"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # The externalSystem of the commitments it creates (default: the kind).
    system = models.CharField(max_length=EXTERNAL_SYSTEM_MAX)
    # The last path segment of the receiving URL (/api/v1/hooks/<hook_id>).
    hook_id = models.CharField(max_length=64, unique=True, editable=False)
    secret = EncryptedTextField()
    # The tracker's user, by the one field each tracker keeps unique
    # (its class's `identity_field`, trackers.kinds: GitHub login, GitLab username, Linear user id,
    # Jira accountId) -> e-mail addresses here; it wins over a payload's e-mail.
    identity_map = models.JSONField(default=dict, blank=True)
    # The tracker's web host (`github.com`, `acme.atlassian.net`,
    # `gitlab.example.com:8443`): an issue link is used only when it is https
    # on this host. Set when added or on the connection's page; blank (GitLab
    # and Jira) until the first authentic delivery with a link sets it.
    site = models.CharField(max_length=SITE_MAX, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    secret_rotated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            # Its commitments are told apart by (system, externalId, assigner):
            # two connections of one owner must not share a system.
            models.UniqueConstraint(fields=["owner", "system"], name="tracker_owner_system_unique"),
        ]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        """How pages and the timeline name it: GitHub connection “acme”."""
        return f"{self.get_kind_display()} connection “{self.system}”"

    @property
    def secret_lost(self) -> bool:
        return is_undecryptable(self.secret)


class Outcome(models.TextChoices):
    CHANGED = "changed", "Changed commitments"
    NOTHING = "nothing", "Nothing done"


class TrackerEvent(models.Model):
    """One authentic delivery, as received once (a redelivery of the same
    delivery id, or the same body under another id, writes nothing): what the
    tracker said and what it did."""

    id = models.BigAutoField(primary_key=True)
    connection = models.ForeignKey(
        TrackerConnection, on_delete=models.CASCADE, related_name="events"
    )
    delivery_id = models.CharField(max_length=DELIVERY_ID_MAX)
    # The SHA-256 (hex) of the raw body: the delivery id is not signed, so a
    # captured delivery could be replayed under a fresh one; its body cannot.
    # Null when the body was not read to its end (too large). Kept as long as
    # the row (the log is not pruned): a replay is refused for as long as the
    # connection exists. Null, not "": unread bodies must not collide.
    body_sha256 = models.CharField(  # noqa: DJ001
        max_length=64, null=True, blank=True, editable=False
    )
    received_at = models.DateTimeField(default=timezone.now)
    # The tracker's name of the event, e.g. "issues.assigned", "Issue Hook.close".
    event = models.CharField(max_length=EVENT_MAX, blank=True)
    # The issue's key as the tracker sent it (not shortened).
    external_id = models.CharField(max_length=ISSUE_KEY_MAX, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    # What was done and why, in words (shown on the connection's page).
    summary = models.TextField()
    # One entry per person considered: {"who", "did", "why", "commitmentId"}.
    actions = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-received_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "delivery_id"], name="tracker_event_delivery_unique"
            ),
            models.UniqueConstraint(
                fields=["connection", "body_sha256"], name="tracker_event_body_unique"
            ),
        ]
        indexes = [
            models.Index(fields=["connection", "-received_at"], name="tracker_event_recent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.external_id} ({self.outcome})"
