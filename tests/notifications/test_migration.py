"""Channels, deliveries and attempts moved from `integrations` to their own app
(integrations 0004, notifications 0001): a database made by the old schema,
with rows in it, migrates to the new one with nothing lost."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from tests.harness.migrations import migrate_back, newest

BEFORE = [("notifications", None), ("integrations", "0003_notification_test_interval")]
URL = "https://hooks.slack.com/services/T000/B000/secret"


def migrate(targets) -> None:
    MigrationExecutor(connection).migrate(targets)
    ContentType.objects.clear_cache()


def latest():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.fixture
def old_schema():
    """The database as the code before the move made it, and its models; the
    newest schema again after the test, whatever happens."""
    migrate_back(BEFORE)
    loader = MigrationExecutor(connection).loader
    nodes = [n for n in loader.graph.leaf_nodes() if n[0] not in ("notifications", "integrations")]
    try:
        yield loader.project_state([*nodes, BEFORE[1]]).apps
    finally:
        newest()


@pytest.mark.django_db(transaction=True)
def test_an_existing_database_moves_to_the_notifications_app_with_nothing_lost(old_schema):
    apps = old_schema
    user_model = apps.get_model("accounts", "User")
    lead = user_model.objects.create(email="lead@example.com", display_name="Lead")
    knight = user_model.objects.create(email="knight@example.com", display_name="Knight")
    commitment = apps.get_model("commitments", "Commitment").objects.create(
        status="Pending_Handshake", assigner=lead, assignee=knight, description="Ship it"
    )
    event = apps.get_model("commitments", "OutboxEvent").objects.create(
        commitment=commitment,
        kind="handshake_requested",
        new_status="Pending_Handshake",
        actor_kind="user",
        actor_user=lead,
        dispatched_at=timezone.now(),
    )
    channel = apps.get_model("integrations", "NotificationChannel").objects.create(
        user=knight, kind="slack", webhook_url=URL, broken_reason="", last_test_at=timezone.now()
    )
    delivery = apps.get_model("integrations", "Delivery").objects.create(
        event=event,
        purpose="nudge",
        recipient=knight,
        channel="slack",
        status="pending",
        attempts=1,
        next_attempt_at=timezone.now() + dt.timedelta(minutes=5),
        last_error="Slack answered 503",
    )
    apps.get_model("integrations", "DeliveryAttempt").objects.create(
        delivery=delivery, channel="slack", outcome="transient", status_code=503
    )
    old_type = apps.get_model("contenttypes", "ContentType").objects.get_for_model(
        apps.get_model("integrations", "NotificationChannel")
    )
    apps.get_model("audit", "AuditEvent").objects.create(
        actor_kind="user",
        user=knight,
        subject_type=old_type,
        subject_id=channel.pk,
        action="notification_channel_set",
    )

    migrate(latest())

    from audit.models import AuditEvent
    from notifications.models import NudgeChannel, NudgeDelivery

    moved = NudgeChannel.objects.get(pk=channel.pk)
    assert (moved.user_id, moved.kind, moved.chat_url) == (knight.pk, "slack", URL)
    assert moved.last_test_at is not None
    moved_delivery = NudgeDelivery.objects.get(pk=delivery.pk)
    assert moved_delivery.event_id == event.pk
    assert (moved_delivery.status, moved_delivery.attempts) == ("pending", 1)
    assert moved_delivery.last_error == "Slack answered 503"
    assert [(a.outcome, a.status_code) for a in moved_delivery.attempt_log.all()] == [
        ("transient", 503)
    ]
    # The audit trail still finds its subject, and permissions kept their type.
    assert ContentType.objects.get_for_model(NudgeChannel).pk == old_type.pk
    assert [e.action for e in AuditEvent.objects.for_object(moved)] == ["notification_channel_set"]
    assert Permission.objects.get(codename="change_nudgedelivery").content_type.app_label == (
        "notifications"
    )
    assert not ContentType.objects.filter(app_label="integrations", model="delivery").exists()
