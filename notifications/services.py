"""The services of notifications' channels: choose one, test it, mark it
broken (and the few reads they share with the page and the sending). Nudges
themselves are made in notifications.dispatch and sent in
notifications.sending, as webhooks' deliveries are."""

from __future__ import annotations

import datetime as dt
import logging
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from audit.models import AuditAction
from audit.services import Actor, audit_event_record
from lib import deliveries, jobs, outbound
from lib.text import excerpt
from notifications import tasks
from notifications.models import (
    LOST_URL_REASON,
    ChannelKind,
    NewsKind,
    NewsWhen,
    NudgeChannel,
    TestNudge,
    TestNudgeStatus,
)
from notifications.nudges import sample_message
from notifications.transports import TransportError, transport_for

if TYPE_CHECKING:
    from accounts.models import User

log = logging.getLogger(__name__)

CHAT_URL_MAX = 2000
CHAT_KINDS = {ChannelKind.SLACK, ChannelKind.TEAMS}
# Claims of one test (each by a worker that died before the outcome) before
# it is failed: a test answers a person who is waiting, so it is not retried
# for long.
TEST_MAX_ATTEMPTS = 3
TEST_INTERRUPTED = (
    "The background worker stopped while sending the test, more than once; try again later."
)


@dataclass(frozen=True)
class Destination:
    """Where a nudge to one person goes right now: their chosen channel, or
    e-mail when they chose none or the one they chose is broken."""

    kind: str
    address: str  # e-mail address or chat URL
    channel: NudgeChannel | None = None

    @property
    def label(self) -> str:
        return ChannelKind(self.kind).label


def notification_channel_get(*, user: User) -> NudgeChannel | None:
    return NudgeChannel.objects.filter(user=user).first()


def destination_for(user: User, *, channel: NudgeChannel | None = None) -> Destination:
    """Where a nudge to `user` goes now (reads only): their chat channel, or
    e-mail when they chose none or it is broken (a URL no configured key
    decrypts included). Pass `channel` when it is loaded already."""
    channel = channel if channel is not None else notification_channel_get(user=user)
    if (
        channel is not None
        and channel.kind in CHAT_KINDS
        and channel.chat_url
        and not channel.is_broken
    ):
        return Destination(kind=channel.kind, address=channel.chat_url, channel=channel)
    return Destination(kind=ChannelKind.EMAIL, address=user.email, channel=channel)


def notification_channel_url_lost_record(
    *, user: User, channel: NudgeChannel | None = None
) -> NudgeChannel | None:
    """The person's channel, marked broken (once, on the audit trail) when
    it is a chat channel whose stored URL no configured key decrypts, so its
    owner and staff see why nudges go by e-mail. Called where the channel is
    met: the Notifications page, dispatch and send."""
    channel = channel if channel is not None else notification_channel_get(user=user)
    if channel is not None and channel.kind in CHAT_KINDS and channel.url_lost:
        _mark_url_lost(channel)
    return channel


def chat_url_check(url: str) -> str:
    """The chat URL to store, or ValidationError: lib.outbound's one rule for
    URLs forms store (`url_to_store`); where a refused name led is logged."""
    try:
        return outbound.url_to_store(url, max_length=CHAT_URL_MAX, empty="Paste the chat URL.")
    except outbound.UrlRefused as exc:
        if exc.detail:
            log.warning("A chat URL was refused: %s", exc.detail)
        raise ValidationError(exc.message) from None


SLACK_URL_PREFIX = "https://hooks.slack.com/"


def check_slack_url(url: str) -> None:
    """A Slack chat URL must be one of Slack's incoming webhooks
    (https://hooks.slack.com/...); a receiver on this machine stands in for
    Slack only where loopback is allowed (development and tests)."""
    if url.startswith(SLACK_URL_PREFIX):
        return
    host = urlsplit(url).hostname or ""
    if settings.OUTBOUND_ALLOW_LOOPBACK and outbound.is_loopback_host(host):
        return
    raise ValidationError(
        "A Slack chat URL starts with https://hooks.slack.com/ (Slack, Apps, "
        "Incoming Webhooks, Add New Webhook)."
    )


@transaction.atomic
def notification_channel_set(
    *, user: User, kind: str, chat_url: str = "", news: Mapping[str, str] | None = None
) -> NudgeChannel:
    """Choose how `user` is nudged, and when each kind of news reaches them
    (`news`: NewsKind value -> NewsWhen value; a kind left out keeps its
    choice). For Slack or Teams an empty URL keeps the stored one (the page
    never shows it back); saving clears a broken mark."""
    if kind not in ChannelKind.values:
        raise ValidationError({"kind": "Choose e-mail, Slack or Microsoft Teams."})
    news = dict(news or {})
    for news_kind, when in news.items():
        if news_kind not in NewsKind.values or when not in NewsWhen.values:
            raise ValidationError(
                {f"news_{news_kind}": "Choose at once, in the daily digest or not at all."}
            )
    channel = NudgeChannel.objects.select_for_update().filter(user=user).first()
    channel = channel or NudgeChannel(user=user)
    previous_url = channel.chat_url
    if kind in CHAT_KINDS:
        if chat_url.strip():
            try:
                channel.chat_url = chat_url_check(chat_url)
                if kind == ChannelKind.SLACK:
                    check_slack_url(channel.chat_url)
            except ValidationError as exc:
                raise ValidationError({"chat_url": exc.messages}) from None
        elif not (channel.kind == kind and channel.chat_url):
            raise ValidationError({"chat_url": "Paste the chat URL."})
    else:
        channel.chat_url = ""  # nothing secret kept that is not in use
    url_changed = channel.chat_url != previous_url
    channel.kind = kind
    for news_kind, when in news.items():
        setattr(channel, f"news_{news_kind}", when)
    channel.broken_at = None
    channel.broken_reason = ""
    channel.save()
    audit_event_record(
        actor=Actor.for_user(user),
        subject=channel,
        action=AuditAction.NOTIFICATION_CHANNEL_SET,
        payload={
            "kind": kind,
            "urlChanged": url_changed,
            "news": {news_kind: channel.news_when(news_kind) for news_kind in NewsKind.values},
        },
    )
    return channel


def notification_channel_mark_broken(
    *, channel_id: uuid.UUID, failed_url: str, reason: str
) -> bool:
    """Mark a chat channel broken after a permanent failure of `failed_url`.
    Does nothing if the owner has since saved another URL or kind."""
    with transaction.atomic():
        channel = NudgeChannel.objects.select_for_update().filter(pk=channel_id).first()
        if channel is None or channel.kind not in CHAT_KINDS or channel.chat_url != failed_url:
            return False
        if channel.is_broken:
            return True
        channel.broken_at = timezone.now()
        channel.broken_reason = excerpt(reason, 500)
        channel.save(update_fields=["broken_at", "broken_reason", "updated_at"])
        audit_event_record(
            actor=Actor.system(),
            subject=channel,
            action=AuditAction.NOTIFICATION_CHANNEL_BROKEN,
            payload={"kind": channel.kind, "reason": channel.broken_reason},
        )
    return True


def _mark_url_lost(channel: NudgeChannel) -> None:
    """Record, once, that `channel`'s URL can no longer be decrypted."""
    if channel.broken_at is not None:
        return
    now = timezone.now()
    with transaction.atomic():
        marked = NudgeChannel.objects.filter(pk=channel.pk, broken_at__isnull=True).update(
            broken_at=now, broken_reason=LOST_URL_REASON, updated_at=now
        )
        if marked:
            audit_event_record(
                actor=Actor.system(),
                subject=channel,
                action=AuditAction.NOTIFICATION_CHANNEL_BROKEN,
                payload={"kind": channel.kind, "reason": LOST_URL_REASON},
            )
    channel.broken_at, channel.broken_reason = now, LOST_URL_REASON


class TestTooSoon(Exception):
    """The owner sent a test less than NOTIFY_TEST_INTERVAL seconds ago."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"You sent a test a moment ago. Try again in {retry_after} s.")
        self.retry_after = retry_after


def _claim_test_slot(*, user: User) -> None:
    """Take this person's slot for a test, or raise TestTooSoon. One
    conditional UPDATE, so racing clicks (or processes) queue one test."""
    interval = dt.timedelta(seconds=settings.NOTIFY_TEST_INTERVAL)
    # A person who never chose a channel has no row yet (e-mail); give them one.
    NudgeChannel.objects.bulk_create([NudgeChannel(user=user)], ignore_conflicts=True)
    now = timezone.now()
    claimed = (
        NudgeChannel.objects.filter(user=user)
        .filter(Q(last_test_at__isnull=True) | Q(last_test_at__lte=now - interval))
        .update(last_test_at=now)
    )
    if not claimed:
        last = NudgeChannel.objects.values_list("last_test_at", flat=True).get(user=user)
        assert last is not None  # not claimed: a test was made within the interval
        wait = (last + interval - now).total_seconds()
        raise TestTooSoon(max(1, math.ceil(wait)))


def test_nudge_request(*, user: User) -> TestNudge:
    """Ask for a test message through the channel `user` chose. Writes the
    request and queues it for a worker (the web request never waits on Slack,
    Teams or the mail server); the page shows the outcome once the worker has
    written it. Tests are spaced by NOTIFY_TEST_INTERVAL seconds per person
    (TestTooSoon)."""
    with transaction.atomic():
        _claim_test_slot(user=user)
        now = timezone.now()
        test = TestNudge.objects.create(
            user=user, requested_at=now, next_attempt_at=now, enqueued_at=now, updated_at=now
        )

        def enqueue() -> None:
            if not jobs.enqueue(tasks.send_test_nudge, str(test.pk), retry=False):
                TestNudge.objects.filter(pk=test.pk, status=TestNudgeStatus.QUEUED).update(
                    status=TestNudgeStatus.FAILED,
                    detail="The background worker could not be reached; try again later.",
                    finished_at=timezone.now(),
                )

        transaction.on_commit(enqueue)
    return test


def test_nudge_latest(*, user: User) -> TestNudge | None:
    return TestNudge.objects.filter(user=user).first()


def test_nudge_get(*, user: User, test_id: uuid.UUID) -> TestNudge | None:
    """One of `user`'s tests (None for someone else's or an unknown id)."""
    return TestNudge.objects.filter(user=user, pk=test_id).first()


def test_nudges_take_due(
    *, now: dt.datetime, requeue_after: dt.timedelta, limit: int
) -> list[uuid.UUID]:
    """For the sweep: ids of tests whose publish was lost or whose worker
    died after claiming them (the lease ran out), stamped as queued. Call
    inside the sweep's transaction."""
    return deliveries.take_due(
        TestNudge.objects.all(), now=now, requeue_after=requeue_after, limit=limit
    )


def test_nudge_send(*, test_id: uuid.UUID | str) -> str | None:
    """The worker's side of "send a test": send it through the channel the
    person has now and record how it went (audited as
    `notification_test_sent`, with the kind and the outcome, never the URL).
    A chat channel that answers for good that it is gone is marked broken;
    one that takes the test is cleared of a broken mark. Returns the outcome,
    or None when the test was already taken by another worker."""
    if not deliveries.claim(TestNudge.objects.all(), pk=test_id, now=timezone.now()):
        return None
    test = TestNudge.objects.select_related("user").get(pk=test_id)
    user = test.user
    channel = notification_channel_get(user=user)
    if test.attempts > TEST_MAX_ATTEMPTS:
        # Claimed again and again by workers that died before an outcome.
        return _record_test(test, channel, kind="", ok=False, detail=TEST_INTERRUPTED)
    if channel is not None and channel.kind in CHAT_KINDS and channel.url_lost:
        _mark_url_lost(channel)
        return _record_test(test, channel, kind=channel.kind, ok=False, detail=LOST_URL_REASON)
    if channel is not None and channel.kind in CHAT_KINDS and channel.chat_url:
        kind, address = channel.kind, channel.chat_url
    else:
        kind, address = ChannelKind.EMAIL, user.email
    try:
        transport_for(kind, address).notify(sample_message(user))
    except TransportError as exc:
        if exc.permanent and channel is not None and kind in CHAT_KINDS:
            notification_channel_mark_broken(
                channel_id=channel.pk, failed_url=address, reason=exc.message
            )
        return _record_test(test, channel, kind=kind, ok=False, detail=exc.message)
    except Exception as exc:  # a bug or a time limit: the page must not wait forever
        log.exception("Test %s failed unexpectedly", test_id)
        _record_test(test, channel, kind=kind, ok=False, detail=excerpt(repr(exc)))
        raise
    if channel is not None and channel.is_broken and kind in CHAT_KINDS:
        NudgeChannel.objects.filter(pk=channel.pk).update(
            broken_at=None, broken_reason="", updated_at=timezone.now()
        )
    label = ChannelKind(kind).label
    # A chat kind has its channel (e-mail is the fallback without one).
    where = channel.masked_url if channel is not None and kind != ChannelKind.EMAIL else user.email
    return _record_test(
        test, channel, kind=kind, ok=True, detail=f"{label} accepted the test message ({where})."
    )


def _record_test(
    test: TestNudge, channel: NudgeChannel | None, *, kind: str, ok: bool, detail: str
) -> str:
    status = TestNudgeStatus.SENT if ok else TestNudgeStatus.FAILED
    with transaction.atomic():
        now = timezone.now()
        TestNudge.objects.filter(pk=test.pk).update(
            kind=kind,
            status=status,
            detail=excerpt(detail, 1000),
            finished_at=now,
            claimed_until=None,
            updated_at=now,
        )
        audit_event_record(
            actor=Actor.for_user(test.user),
            subject=channel if channel is not None else test.user,
            action=AuditAction.NOTIFICATION_TEST_SENT,
            payload={"kind": kind, "outcome": status.value},
        )
    return status.value
