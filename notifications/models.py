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
    "DigestReason",
    "NewsKind",
    "NewsWhen",
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


class NewsKind(models.TextChoices):
    """The kinds of news a person chooses for (Settings, Notifications;
    docs/glossary.md): what is asked of them, answers to what they asked,
    comments, and reminders."""

    ASKED = "asked", "Asked of me"
    ANSWERED = "answered", "Answered"
    COMMENTED = "commented", "Commented"
    REMINDERS = "reminders", "Reminders"


class NewsWhen(models.TextChoices):
    """When one kind of news reaches a person: at once (still within the nudge
    cap, and close moves together), in their daily digest, or not at all."""

    NOW = "now", "At once"
    DIGEST = "digest", "In the daily digest"
    OFF = "off", "Not at all"


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
    # When each kind of news reaches this person (NewsKind, NewsWhen); no row
    # means at once for all. `news_reminders` off: no reminders are made.
    news_asked = models.CharField(max_length=8, choices=NewsWhen.choices, default=NewsWhen.NOW)
    news_answered = models.CharField(max_length=8, choices=NewsWhen.choices, default=NewsWhen.NOW)
    news_commented = models.CharField(max_length=8, choices=NewsWhen.choices, default=NewsWhen.NOW)
    news_reminders = models.CharField(max_length=8, choices=NewsWhen.choices, default=NewsWhen.NOW)
    # The last "send a test": tests are sent while the owner waits, so they
    # are spaced (NOTIFY_TEST_INTERVAL) by a conditional UPDATE of this column.
    last_test_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.get_kind_display()} for {self.user_id}"

    def news_when(self, kind: str) -> str:
        """When news of `kind` (a NewsKind) reaches this person."""
        return str(getattr(self, f"news_{NewsKind(kind).value}"))

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
    # A counter-proposal or a request for more time waiting for the
    # assigner's answer; its moment is when it was made.
    PROPOSAL_WAITING = "proposal_waiting", "A proposal waiting for your answer"


class DigestReason(models.TextChoices):
    """Why a digest gathers several nudges into one message."""

    # Over a cap: the nudge cap of a pair, the reminders' hour, the
    # invitation's day (the digests before issue 26).
    CAP = "cap", "Over a cap"
    # Moves for one person close together (NUDGE_COALESCE_WINDOW).
    TOGETHER = "together", "Close together"
    # News the person chose to get in their daily digest (DIGEST_HOUR).
    DAILY = "daily", "Daily digest"


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
    # NUDGE_COALESCE_WINDOW spaces the messages to one person about moves:
    # when this one counts (a nudge that went at once: its dispatch; a digest
    # of moves close together: its planned send); null otherwise.
    coalesce_at = models.DateTimeField(null=True, blank=True)
    # A digest carries its own event and those of the deliveries it holds.
    is_digest = models.BooleanField(default=False)
    digest_reason = models.CharField(
        max_length=16, choices=DigestReason.choices, default=DigestReason.CAP
    )
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
            models.Index(
                fields=["recipient", "coalesce_at"],
                condition=Q(coalesce_at__isnull=False),
                name="delivery_coalesce_idx",
            ),
            # Whose turn it is (notifications.turns): a person's nudges still
            # to go, by event, without reading their whole history (the
            # assigner of every sync had thousands, read for every send).
            models.Index(
                fields=["recipient", "event"],
                condition=Q(status__in=["pending", "sending"]),
                name="delivery_to_go_idx",
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
