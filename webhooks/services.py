"""What people do with their webhook endpoints: keyword-only services, one
transaction each, every change on the audit trail (`actor` defaults to the
endpoint's owner; staff and shell commands pass their own).

The secret is generated here (`whsec_` + base64 of 32 random bytes), returned
once to be shown once, and stored encrypted (lib.crypto). So is the URL, in
the exact form it is requested (lib.outbound.canonical_url); the audit trail
gets only `scheme://host/…`. A URL is checked when it is registered or
changed (lib.outbound.url_to_store, the one rule of every form that takes a
URL), and again at every send. A refusal about what the host name resolves
to is shown as one generic message (the detail would tell how internal names
resolve) and logged with its detail.

One person's share: at most WEBHOOK_MAX_ENDPOINTS endpoints, and one test
event every WEBHOOK_TEST_INTERVAL seconds (a shared token bucket,
ratelimits.buckets); their sends in flight are capped in webhooks.sending.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.models import AuditAction
from audit.services import Actor, audit_event_record
from commitments.models import EXTERNAL_SYSTEM_MAX
from lib import deliveries, outbound
from lib.outbound import masked_url
from lib.text import strip_blank
from ratelimits.buckets import take
from webhooks import payloads
from webhooks.dispatch import webhooks_queue_on_commit
from webhooks.errors import (
    WebhookEndpointExists,
    WebhookEndpointLimit,
    WebhookEndpointPaused,
    WebhookError,
    WebhookNotReplayable,
    WebhookTestTooSoon,
    WebhookUrlRefused,
)
from webhooks.models import (
    LOST_SECRET_REASON,
    LOST_URL_REASON,
    URL_MAX,
    WebhookDelivery,
    WebhookDeliveryStatus,
    WebhookEndpoint,
    WebhookPayload,
)
from webhooks.signing import secret_generate

if TYPE_CHECKING:
    from accounts.models import User

log = logging.getLogger(__name__)

URL_HOST_REFUSED = outbound.HOST_REFUSED


def webhook_url_check(url: str) -> str:
    """The URL to store if this service may send to it (lib.outbound's one
    rule for URLs forms store: `url_to_store`); else WebhookUrlRefused with
    the reason. Where a refused host name led goes to the log only."""
    try:
        return outbound.url_to_store(
            url, max_length=URL_MAX, empty="Enter the URL to send events to."
        )
    except outbound.UrlRefused as exc:
        if exc.detail:
            log.warning("A webhook URL was refused: %s", exc.detail)
        raise WebhookUrlRefused(exc.message, field="url") from None


def _external_system(value: str) -> str:
    value = strip_blank(value or "")  # as the inbox trims externalSystem
    if not 1 <= len(value) <= EXTERNAL_SYSTEM_MAX:
        raise WebhookError(
            f"Enter the external system's name (1 to {EXTERNAL_SYSTEM_MAX} characters), "
            "as your integration sends it in externalSystem.",
            field="external_system",
        )
    return value


def _events(events: Iterable[str]) -> list[str]:
    """The `events` to store for a choice: the contract's four, then the
    chosen optional ones in the page's order. A name that is neither is
    refused (WebhookError on the field `events`)."""
    chosen = set(events)
    unknown = sorted(chosen - set(payloads.OPTIONAL_EVENTS) - set(payloads.CONTRACT_EVENTS))
    if unknown:
        raise WebhookError(
            "Choose among the events listed; not an event: " + ", ".join(unknown) + ".",
            field="events",
        )
    return [*payloads.CONTRACT_EVENTS, *(n for n in payloads.OPTIONAL_EVENTS if n in chosen)]


def _actor(endpoint_user: User, actor: Actor | None) -> Actor:
    return actor if actor is not None else Actor.for_user(endpoint_user)


def webhook_endpoint_create(
    *,
    user: User,
    external_system: str,
    url: str,
    events: Iterable[str] = (),
    actor: Actor | None = None,
) -> tuple[WebhookEndpoint, str]:
    """Register an endpoint; returns it and its secret (to be shown once).
    It receives the contract's four events and the optional ones in
    `events`. A person has at most WEBHOOK_MAX_ENDPOINTS (WebhookEndpointLimit)."""
    external_system = _external_system(external_system)
    url = webhook_url_check(url)
    chosen = _events(events)
    secret = secret_generate()
    limit = settings.WEBHOOK_MAX_ENDPOINTS
    try:
        with transaction.atomic():
            # The owner's row, locked: one person's registrations take turns,
            # so two at once cannot both pass the count.
            get_user_model().objects.select_for_update().filter(pk=user.pk).exists()
            if WebhookEndpoint.objects.filter(user=user).count() >= limit:
                raise WebhookEndpointLimit(
                    f"You have {limit} endpoints, the most one person may have; "
                    "delete one to add another."
                )
            endpoint = WebhookEndpoint.objects.create(
                user=user, external_system=external_system, url=url, secret=secret, events=chosen
            )
            audit_event_record(
                actor=_actor(user, actor),
                subject=endpoint,
                action=AuditAction.WEBHOOK_ENDPOINT_CREATED,
                payload={
                    "externalSystem": external_system,
                    "url": masked_url(url),
                    "events": chosen,
                },
            )
    except IntegrityError:
        raise WebhookEndpointExists(
            f"You already have an endpoint for {external_system}.", field="external_system"
        ) from None
    return endpoint, secret


def webhook_endpoint_update(
    *, endpoint: WebhookEndpoint, url: str, actor: Actor | None = None
) -> WebhookEndpoint:
    """Change where events go. The audit trail says where from and to as
    `scheme://host/…` and whether the URL changed, never the URL. A URL that
    could not be read (lost encryption key) is simply replaced."""
    url = webhook_url_check(url)
    with transaction.atomic():
        old = endpoint.url
        endpoint.url = url
        fields = ["url", "updated_at"]
        if endpoint.paused_at is not None and endpoint.paused_reason == LOST_URL_REASON:
            endpoint.paused_at, endpoint.paused_reason = None, ""
            fields += ["paused_at", "paused_reason"]
        endpoint.save(update_fields=fields)
        audit_event_record(
            actor=_actor(endpoint.user, actor),
            subject=endpoint,
            action=AuditAction.WEBHOOK_ENDPOINT_CHANGED,
            payload={
                "url": {"old": masked_url(old), "new": masked_url(url)},
                "changed": old != url,
            },
        )
    return endpoint


def webhook_endpoint_choose_events(
    *, endpoint: WebhookEndpoint, events: Iterable[str], actor: Actor | None = None
) -> WebhookEndpoint:
    """Choose the optional events the endpoint receives (`events`; the
    contract's four are received whatever it says). From the next event
    dispatched on; deliveries already made are sent as they are. On the
    audit trail as a change of the endpoint, with the old and the new list;
    the same choice again changes nothing and writes nothing."""
    chosen = _events(events)
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        old = list(endpoint.events or [])
        if old == chosen:
            return endpoint
        endpoint.events = chosen
        endpoint.save(update_fields=["events", "updated_at"])
        audit_event_record(
            actor=_actor(endpoint.user, actor),
            subject=endpoint,
            action=AuditAction.WEBHOOK_ENDPOINT_CHANGED,
            payload={"events": {"old": old, "new": chosen}},
        )
    return endpoint


def webhook_endpoint_pause(
    *, endpoint: WebhookEndpoint, reason: str = "Paused by its owner.", actor: Actor | None = None
) -> WebhookEndpoint:
    """Stop sending to it. Deliveries due while it is paused fail (and can be
    replayed once it is resumed); no new ones are made."""
    now = timezone.now()
    with transaction.atomic():
        endpoint.paused_at, endpoint.paused_reason = now, reason[:500]
        endpoint.save(update_fields=["paused_at", "paused_reason", "updated_at"])
        audit_event_record(
            actor=_actor(endpoint.user, actor),
            subject=endpoint,
            action=AuditAction.WEBHOOK_ENDPOINT_PAUSED,
            payload={"reason": endpoint.paused_reason},
        )
    return endpoint


def webhook_endpoint_resume(
    *, endpoint: WebhookEndpoint, actor: Actor | None = None
) -> WebhookEndpoint:
    with transaction.atomic():
        endpoint.paused_at, endpoint.paused_reason = None, ""
        endpoint.save(update_fields=["paused_at", "paused_reason", "updated_at"])
        audit_event_record(
            actor=_actor(endpoint.user, actor),
            subject=endpoint,
            action=AuditAction.WEBHOOK_ENDPOINT_RESUMED,
        )
    return endpoint


def webhook_endpoint_delete(*, endpoint: WebhookEndpoint, actor: Actor | None = None) -> None:
    """Delete it with its deliveries (the audit trail keeps the record)."""
    with transaction.atomic():
        audit_event_record(
            actor=_actor(endpoint.user, actor),
            subject=endpoint,
            action=AuditAction.WEBHOOK_ENDPOINT_DELETED,
            payload={
                "externalSystem": endpoint.external_system,
                "url": masked_url(endpoint.url),
            },
        )
        endpoint.delete()


def webhook_endpoint_rotate_secret(
    *, endpoint: WebhookEndpoint, now: dt.datetime | None = None, actor: Actor | None = None
) -> str:
    """A new secret, returned to be shown once. For WEBHOOK_ROTATION_OVERLAP
    (24 h) the old one signs too, then it is forgotten. A secret no key can
    decrypt any more is simply replaced (nothing could sign with it)."""
    now = now or timezone.now()
    secret = secret_generate()
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        if endpoint.secret_lost:
            endpoint.previous_secret, endpoint.previous_secret_until = "", None
        else:
            endpoint.previous_secret = endpoint.secret
            endpoint.previous_secret_until = now + dt.timedelta(
                seconds=settings.WEBHOOK_ROTATION_OVERLAP
            )
        endpoint.secret = secret
        fields = ["secret", "previous_secret", "previous_secret_until", "updated_at"]
        if endpoint.paused_at is not None and endpoint.paused_reason == LOST_SECRET_REASON:
            endpoint.paused_at, endpoint.paused_reason = None, ""
            fields += ["paused_at", "paused_reason"]
        endpoint.save(update_fields=fields)
        audit_event_record(
            actor=_actor(endpoint.user, actor),
            subject=endpoint,
            action=AuditAction.WEBHOOK_SECRET_ROTATED,
            payload={"previousValidUntil": payloads.iso_millis(endpoint.previous_secret_until)}
            if endpoint.previous_secret_until
            else {},
        )
    return secret


def webhook_endpoints_forget_old_secrets(*, now: dt.datetime) -> int:
    """Clear the previous secrets whose rotation window has ended (the sweep
    calls it; signing ignores them from that moment anyway)."""
    return WebhookEndpoint.objects.filter(previous_secret_until__lte=now).update(
        previous_secret="", previous_secret_until=None
    )


def webhook_test_send(*, endpoint: WebhookEndpoint, actor: Actor | None = None) -> WebhookDelivery:
    """Queue a `commitment.test` event to the endpoint (marked `"test": true`,
    listing the events the endpoint receives, sent once, never retried,
    never pausing the endpoint). Sent to a paused
    endpoint too, so its owner can check it before resuming. One test per
    person every WEBHOOK_TEST_INTERVAL seconds, whichever endpoint
    (WebhookTestTooSoon), as for the notification test."""
    interval = max(1, settings.WEBHOOK_TEST_INTERVAL)
    allowed, retry_after = take(f"webhook-test:{endpoint.user_id}", 1, 1 / interval)
    if not allowed:
        raise WebhookTestTooSoon(retry_after)
    now = timezone.now()
    with transaction.atomic():
        delivery = WebhookDelivery.objects.create(
            endpoint=endpoint,
            event_name=payloads.TEST_EVENT,
            is_test=True,
            next_attempt_at=now,
            enqueued_at=now,
            created_at=now,
        )
        WebhookPayload.objects.create(
            delivery=delivery,
            body=payloads.encode(
                payloads.test_envelope(
                    external_system=endpoint.external_system,
                    user_id=endpoint.user_id,
                    now=now,
                    events=[*payloads.CONTRACT_EVENTS, *endpoint.chosen_events],
                )
            ),
            event_timestamp=now,
        )
        audit_event_record(
            actor=_actor(endpoint.user, actor),
            subject=endpoint,
            action=AuditAction.WEBHOOK_TEST_SENT,
            payload={"delivery": str(delivery.pk)},
        )
        webhooks_queue_on_commit([delivery.pk])
    return delivery


def webhook_delivery_replay(*, delivery: WebhookDelivery, actor: Actor) -> WebhookDelivery:
    """Send a permanently failed delivery again: the same id and body, signed
    again with the current secret(s), with a new 24-hour window."""
    now = timezone.now()
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update()
            .select_related("endpoint")
            .get(pk=delivery.pk)
        )
        if delivery.status != WebhookDeliveryStatus.FAILED:
            raise WebhookNotReplayable("Only a delivery that failed for good can be replayed.")
        if delivery.endpoint.is_paused and not delivery.is_test:
            raise WebhookEndpointPaused("The endpoint is paused; resume it, then replay.")
        deliveries.restart(
            WebhookDelivery.objects.filter(pk=delivery.pk),
            now=now,
            first_attempt_at=None,
            failed_at=None,
            replays=1 + delivery.replays,
        )
        audit_event_record(
            actor=actor,
            subject=delivery.endpoint,
            action=AuditAction.WEBHOOK_DELIVERY_REPLAYED,
            payload={"delivery": str(delivery.pk), "event": delivery.event_name},
        )
        webhooks_queue_on_commit([delivery.pk])
    delivery.refresh_from_db()
    return delivery


__all__ = [
    "webhook_delivery_replay",
    "webhook_endpoint_choose_events",
    "webhook_endpoint_create",
    "webhook_endpoint_delete",
    "webhook_endpoint_pause",
    "webhook_endpoint_resume",
    "webhook_endpoint_rotate_secret",
    "webhook_endpoint_update",
    "webhook_endpoints_forget_old_secrets",
    "webhook_test_send",
    "webhook_url_check",
]
