"""Nudge channels, nudge deliveries and their attempts.

A `NudgeDelivery` is one nudge to one person for one outbox event
(`commitments.OutboxEvent`); its status, lease and retries follow
`lib.leasing`. The tables were `integrations_*` until the nudges got an app
of their own (migration integrations 0004 / notifications 0001 moved them),
and took the models' names when these became the glossary's (notifications
0010: `Delivery`, `DeliveryAttempt`, `NotificationChannel` before).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from lib import leasing
from lib.crypto import EncryptedTextField, is_undecryptable
from lib.deliveries import Attempt, AttemptOutcome, LeasedDelivery, LeasedRow, lease_indexes
from lib.outbound import masked_url

__all__ = [
    "AttemptOutcome",
    "ChannelKind",
    "NudgeAttempt",
    "NudgeChannel",
    "NudgeDelivery",
    "NudgeDeliveryStatus",
    "NudgePair",
    "Reminder",
    "ReminderKind",
    "TestNudge",
    "TestNudgeStatus",
]


class ChannelKind(models.TextChoices):
    EMAIL = "email", "E-mail"
    SLACK = "slack", "Slack"
    TEAMS = "teams", "Microsoft Teams"


LOST_URL_REASON = (
    "The chat URL was stored with an encryption key that is no longer configured; "
    "enter the URL again."
)


class NudgeChannel(models.Model):
    """How one person wants to be nudged. No row means e-mail."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="nudge_channel"
    )
    kind = models.CharField(max_length=16, choices=ChannelKind.choices, default=ChannelKind.EMAIL)
    # The chat URL (Slack's incoming webhook, a Teams workflow) a nudge is
    # posted to is a bearer secret: encrypted at rest.
    chat_url = EncryptedTextField(blank=True, default="")
    # Set when the service answered that the URL is gone for good; nudges then
    # fall back to e-mail until the owner saves the channel again.
    broken_at = models.DateTimeField(null=True, blank=True)
    broken_reason = models.CharField(max_length=500, blank=True)
    # Reminders (notifications.reminders): on unless the person turned them off.
    reminders = models.BooleanField(default=True)
    # The last "send a test": tests are sent while the owner waits, so they
    # are spaced (NOTIFY_TEST_INTERVAL) by a conditional UPDATE of this column.
    last_test_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.get_kind_display()} for {self.user_id}"

    @property
    def url_lost(self) -> bool:
        """The stored URL is there but no configured key decrypts it
        (lib.crypto.Undecryptable): the channel cannot work until the owner
        enters the URL again."""
        return is_undecryptable(self.chat_url)

    @property
    def is_broken(self) -> bool:
        return self.broken_at is not None or self.url_lost

    @property
    def problem(self) -> str:
        """Why the channel is broken, for its owner and staff."""
        if self.url_lost:
            return LOST_URL_REASON
        return self.broken_reason

    @property
    def masked_url(self) -> str:
        return masked_url(self.chat_url)


class NudgeDeliveryStatus(models.TextChoices):
    PENDING = leasing.PENDING, "Pending"
    SENDING = leasing.SENDING, "Sending"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"
    # Over the hourly cap: goes out inside its digest (`NudgeDelivery.digest`).
    HELD = "held", "Held for a digest"
    # A reminder that was no longer due when its turn came (done, answered,
    # its deadline changed, or its recipient turned reminders off).
    CANCELLED = "cancelled", "Not sent, no longer due"


class ReminderKind(models.TextChoices):
    DUE_SOON = "due_soon", "Due within a day"
    OVERDUE = "overdue", "Overdue"
    HANDSHAKE_WAITING = "handshake_waiting", "Waiting for an answer"


class Reminder(models.Model):
    """One reminder about one commitment, made once (notifications.reminders).

    The key is (commitment, kind, moment): `moment` is the deadline the
    reminder is about, or, for a request waiting for its handshake, when the
    request was sent. A scheduler that runs twice, two schedulers, or one
    that crashed after writing cannot make a second row; a renegotiated
    deadline (or a request sent again) is another moment, so it gets its
    own reminders. Sent as a `NudgeDelivery` (its `reminder`), like a nudge.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    commitment = models.ForeignKey(
        "commitments.Commitment", on_delete=models.CASCADE, related_name="+"
    )
    kind = models.CharField(max_length=24, choices=ReminderKind.choices)
    moment = models.DateTimeField()
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["commitment", "kind", "moment"], name="reminder_once"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} reminder for {self.commitment_id}"


class NudgeDelivery(LeasedDelivery):
    """One message to one recipient for one outbox event or reminder, and its
    progress, sent by the leased-send protocol (lib.deliveries); `attempts`
    counts the claims on the current channel."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # What the message is about: an outbox event (a nudge) or a reminder.
    event = models.ForeignKey(
        "commitments.OutboxEvent",
        on_delete=models.CASCADE,
        related_name="deliveries",
        null=True,
        blank=True,
    )
    reminder = models.OneToOneField(
        Reminder, on_delete=models.CASCADE, related_name="delivery", null=True, blank=True
    )
    # Null only for an invitation: a request to an address nobody has an
    # account for yet (`address`), always by e-mail.
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="deliveries",
        null=True,
        blank=True,
    )
    address = models.EmailField(max_length=254, blank=True)
    # The channel this delivery goes (or went) through: the recipient's choice
    # when it was created, e-mail after a fallback.
    channel = models.CharField(max_length=16, choices=ChannelKind.choices)
    status = models.CharField(
        max_length=16, choices=NudgeDeliveryStatus.choices, default=NudgeDeliveryStatus.PENDING
    )
    # The nudge cap (settings.NUDGE_CAP per NUDGE_CAP_WINDOW) counts the nudges
    # to an assignee about one assigner's requests: `sender` is that assigner
    # (null for nudges the cap does not count), `counted_at` when this one
    # counts (its creation, or a digest's planned send; null while held).
    sender = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
    )
    counted_at = models.DateTimeField(null=True, blank=True)
    # A digest carries its own event and those of the deliveries it holds.
    is_digest = models.BooleanField(default=False)
    digest = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="held"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "nudge deliveries"
        constraints = [
            # Dispatching an event twice cannot send twice.
            models.UniqueConstraint(fields=["event", "recipient"], name="delivery_once_per_event"),
            models.UniqueConstraint(
                fields=["event"],
                condition=Q(recipient__isnull=True),
                name="delivery_invitation_once_per_event",
            ),
            # An invitation has an address instead of a recipient.
            models.CheckConstraint(
                condition=Q(recipient__isnull=False) | ~Q(address=""),
                name="delivery_recipient_or_address",
            ),
            # A delivery is about an outbox event (a nudge) or a reminder.
            models.CheckConstraint(
                condition=Q(event__isnull=False, reminder__isnull=True)
                | Q(event__isnull=True, reminder__isnull=False),
                name="delivery_event_or_reminder",
            ),
        ]
        indexes = [
            *lease_indexes("delivery"),
            models.Index(fields=["recipient", "-created_at"], name="delivery_recipient_idx"),
            models.Index(
                fields=["recipient", "sender", "counted_at"],
                condition=Q(sender__isnull=False),
                name="delivery_nudge_cap_idx",
            ),
        ]

    def __str__(self) -> str:
        if self.reminder_id is not None:
            return f"Reminder {self.reminder_id} to {self.recipient_id} ({self.status})"
        return f"Nudge of event {self.event_id} to {self.recipient_id} ({self.status})"

    @property
    def commitment(self):
        """The commitment it is about (load `event__commitment` or
        `reminder__commitment` with it)."""
        source = self.reminder if self.reminder_id is not None else self.event
        return source.commitment

    @property
    def about(self) -> str:
        """What it is about, in a word or two, for pages and the admin."""
        # One of the two is set (no query for the unset one).
        if self.reminder is not None:
            return f"Reminder: {self.reminder.get_kind_display()}"
        return self.event.get_kind_display() if self.event is not None else ""


class NudgePair(models.Model):
    """One assigner (`sender`) and one assignee: the row locked (SELECT ...
    FOR UPDATE) while deciding whether a nudge from the one to the other goes
    out, waits in a digest or starts one, so that two workers dispatching at
    once cannot both take the last place under the cap."""

    sender = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["sender", "recipient"], name="nudge_pair_once"),
        ]

    def __str__(self) -> str:
        return f"{self.sender_id} to {self.recipient_id}"


class NudgeAttempt(Attempt):
    """One try at sending a nudge delivery (lib.deliveries.Attempt), through
    `channel`."""

    delivery = models.ForeignKey(
        NudgeDelivery, on_delete=models.CASCADE, related_name="attempt_log"
    )
    channel = models.CharField(max_length=16, choices=ChannelKind.choices)

    def __str__(self) -> str:
        return f"{self.channel} at {self.started_at:%Y-%m-%d %H:%M:%S}: {self.outcome or '…'}"


class TestNudgeStatus(models.TextChoices):
    # Not a test class, whatever its name says to pytest (which collects
    # `Test*` names imported into a test module).
    __test__ = False

    QUEUED = leasing.PENDING, "Waiting for the worker"
    SENDING = leasing.SENDING, "Sending"
    SENT = "sent", "Accepted"
    FAILED = "failed", "Not accepted"


class TestNudge(LeasedRow):
    """One test nudge ("Send a test" on Settings, Notifications) a person
    asked for (`ChannelTest` before notifications 0010). The page writes it and queues
    it; a worker sends it through the person's channel at that moment and
    writes the outcome, which the page shows (its script polls for it).

    Sent like every other row workers send (`lib.deliveries`): claimed with a
    lease, so a worker that dies after the claim leaves a row the sweep
    queues again once the lease has run out (at most TEST_MAX_ATTEMPTS
    claims, then it is failed with the reason)."""

    __test__ = False  # see TestNudgeStatus

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="test_nudges"
    )
    # The channel it went through: set when the worker sends it.
    kind = models.CharField(max_length=16, choices=ChannelKind.choices, blank=True)
    status = models.CharField(
        max_length=16, choices=TestNudgeStatus.choices, default=TestNudgeStatus.QUEUED
    )
    detail = models.CharField(max_length=1000, blank=True)
    requested_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-requested_at"]
        indexes = [
            models.Index(fields=["user", "-requested_at"], name="channeltest_user_idx"),
            *lease_indexes("channeltest"),
        ]

    def __str__(self) -> str:
        return f"Test for {self.user_id} at {self.requested_at:%Y-%m-%d %H:%M:%S}: {self.status}"

    @property
    def is_done(self) -> bool:
        return self.status in (TestNudgeStatus.SENT, TestNudgeStatus.FAILED)
