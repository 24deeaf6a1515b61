"""Outbound webhooks: endpoints integrators register, and the deliveries made
to them, each with its frozen payload and its attempts (saleor's shape).

A `WebhookDelivery` is one event to one endpoint. Its id is THE delivery id
(`X-Service-Delivery`, `webhook-id`): the same on every retry and replay.
Its status, lease and retries follow `lib.leasing`, like a nudge's
(`notifications.NudgeDelivery`), but its deadline is a time (24 hours after the
first attempt), not a number of attempts.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from commitments.models import EXTERNAL_SYSTEM_MAX
from lib import leasing
from lib.crypto import EncryptedTextField, is_undecryptable
from lib.deliveries import Attempt, AttemptOutcome, LeasedDelivery, lease_indexes
from lib.outbound import masked_url
from webhooks.payloads import CONTRACT_EVENTS, OPTIONAL_EVENTS

__all__ = [
    "AttemptOutcome",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookDeliveryStatus",
    "WebhookEndpoint",
    "WebhookPayload",
]

URL_MAX = 2000
EXCERPT_BYTES = 1024  # of a response body, kept per attempt and per delivery

LOST_SECRET_REASON = (
    "The signing secret was stored with an encryption key that is no longer configured; "
    "rotate the secret to get a new one."
)
LOST_URL_REASON = (
    "The URL was stored with an encryption key that is no longer configured; "
    "enter the URL again (Edit URL)."
)
OWNER_INACTIVE_REASON = (
    "Its owner's account is deactivated: nothing is sent to it. Once the account is "
    "active again, its owner resumes it."
)


def contract_events() -> list[str]:
    """What an endpoint receives until its owner chooses more: the contract's
    four events (the default of `WebhookEndpoint.events`; the migration that
    added the field gave them to every endpoint there was)."""
    return list(CONTRACT_EVENTS)


class WebhookEndpoint(models.Model):
    """Where one person's events about one external system go: one per
    (user, external_system). The secret is `whsec_` + base64 of 32 random
    bytes, shown once, encrypted at rest. During a rotation the previous
    secret signs too, until `previous_secret_until`; then it is cleared.
    The URL is a secret too (its path often carries the receiver's token):
    encrypted at rest, stored exactly as it is sent (lib.outbound's canonical
    form), and masked (`masked_url`) everywhere but its owner's edit form."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook_endpoints"
    )
    external_system = models.CharField(max_length=EXTERNAL_SYSTEM_MAX)
    url = EncryptedTextField()  # at most URL_MAX characters (webhooks.services)
    secret = EncryptedTextField()
    previous_secret = EncryptedTextField(blank=True, default="")
    previous_secret_until = models.DateTimeField(null=True, blank=True)
    # Set when deliveries stop: by its owner, or by the service (the receiver
    # answered 410 Gone, the secret cannot be read). Nothing is sent while set.
    paused_at = models.DateTimeField(null=True, blank=True)
    paused_reason = models.CharField(max_length=500, blank=True)
    # The event names it receives: the contract's four always (they are sent
    # whatever this says), then those its owner chose of OPTIONAL_EVENTS
    # (webhooks.services.webhook_endpoint_choose_events keeps it so).
    events = models.JSONField(default=contract_events)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["external_system"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "external_system"], name="webhook_endpoint_once_per_system"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.external_system} endpoint of {self.user_id}"

    @property
    def secret_lost(self) -> bool:
        """The stored secret is there but no configured key decrypts it."""
        return is_undecryptable(self.secret)

    @property
    def url_lost(self) -> bool:
        """The stored URL is there but no configured key decrypts it."""
        return is_undecryptable(self.url)

    if TYPE_CHECKING:
        # Set on the endpoints webhooks.selectors.webhook_endpoints_for_page
        # returns (with its prefetched `recent` and `failed`).
        last_test: WebhookDelivery | None
        last_test_text: str
        events_form: Any  # set by webhooks.views._render_list: its EndpointEventsForm

    @property
    def chosen_events(self) -> list[str]:
        """The optional events it receives, in the page's order."""
        chosen = set(self.events or ())
        return [name for name in OPTIONAL_EVENTS if name in chosen]

    def receives(self, event_name: str) -> bool:
        """Whether an event of that name is sent to it: the contract's four
        always, another only when chosen."""
        return event_name in CONTRACT_EVENTS or event_name in (self.events or ())

    @property
    def masked_url(self) -> str:
        return masked_url(self.url)

    @property
    def is_paused(self) -> bool:
        return self.paused_at is not None

    @property
    def is_broken(self) -> bool:
        return self.is_paused or self.secret_lost or self.url_lost

    @property
    def problem(self) -> str:
        """Why nothing is sent, for its owner and staff ('' when all is well)."""
        if self.secret_lost:
            return LOST_SECRET_REASON
        if self.url_lost:
            return LOST_URL_REASON
        return self.paused_reason if self.is_paused else ""

    def signing_secrets(self, now: dt.datetime) -> list[str]:
        """The secrets that sign a delivery sent at `now`: the current one,
        then the previous one while its rotation window lasts. Unreadable
        ones are left out."""
        secrets = [self.secret] if isinstance(self.secret, str) and self.secret else []
        if (
            self.previous_secret_until is not None
            and now < self.previous_secret_until
            and isinstance(self.previous_secret, str)
            and self.previous_secret
        ):
            secrets.append(self.previous_secret)
        return secrets


class WebhookDeliveryStatus(models.TextChoices):
    PENDING = leasing.PENDING, "Pending"
    SENDING = leasing.SENDING, "Sending"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"


class WebhookDelivery(LeasedDelivery):
    """One event to one endpoint, and its progress, sent by the leased-send
    protocol (lib.deliveries). Its id is the delivery id the receiver sees,
    the same on every attempt and replay. Retries stop 24 hours after
    `first_attempt_at` (WEBHOOK_RETRY_WINDOW); a replay starts a new window.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    # The outbox event it came from; none for a test event.
    event = models.ForeignKey(
        "commitments.OutboxEvent",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="webhook_deliveries",
    )
    event_name = models.CharField(max_length=64)  # commitment.completed, commitment.test, ...
    commitment = models.ForeignKey(
        "commitments.Commitment",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="webhook_deliveries",
    )
    is_test = models.BooleanField(default=False)
    status = models.CharField(
        max_length=16, choices=WebhookDeliveryStatus.choices, default=WebhookDeliveryStatus.PENDING
    )
    first_attempt_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_response_excerpt = models.TextField(blank=True)  # at most EXCERPT_BYTES of the body
    replays = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "webhook deliveries"
        constraints = [
            # Dispatching an event twice cannot make two deliveries.
            models.UniqueConstraint(
                fields=["event", "endpoint"],
                condition=Q(event__isnull=False),
                name="webhook_delivery_once_per_event",
            ),
        ]
        indexes = [
            *lease_indexes("webhook"),
            models.Index(fields=["endpoint", "-created_at"], name="webhook_endpoint_recent_idx"),
            # Whose turn it is (webhooks.turns): an endpoint's line, in the
            # order it was made, without reading its whole history.
            models.Index(
                fields=["endpoint", "created_at"],
                condition=Q(status__in=["pending", "sending"]),
                name="webhook_endpoint_line_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_name} {self.pk} ({self.status})"

    @property
    def is_replayable(self) -> bool:
        return self.status == WebhookDeliveryStatus.FAILED


class WebhookPayload(models.Model):
    """The body of a delivery, frozen when it was made: every attempt and
    every replay sends (and signs) exactly these bytes (`body` as UTF-8)."""

    delivery = models.OneToOneField(
        WebhookDelivery, on_delete=models.CASCADE, primary_key=True, related_name="payload"
    )
    body = models.TextField()
    # The moment the event happened (the envelope's `timestamp`).
    event_timestamp = models.DateTimeField()

    def __str__(self) -> str:
        return f"Payload of {self.delivery_id}"

    @property
    def body_bytes(self) -> bytes:
        return self.body.encode("utf-8")


class WebhookAttempt(Attempt):
    """One POST of a delivery (lib.deliveries.Attempt), with the first
    EXCERPT_BYTES of the answer."""

    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log"
    )
    response_excerpt = models.TextField(blank=True)  # at most EXCERPT_BYTES of the body

    def __str__(self) -> str:
        return f"{self.started_at:%Y-%m-%d %H:%M:%S}: {self.outcome or '…'}"
