"""Migration notifications 0010: the nudge's models take the glossary's names
(NudgeDelivery, NudgeAttempt, NudgeChannel, TestNudge; docs/glossary.md) and their
tables follow. A database with rows in it keeps every row, its content types
(audit rows point at them) and its permissions (a group given "change
delivery" keeps it as "change nudge delivery")."""

from __future__ import annotations

import pytest
from django.apps import apps as django_apps
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from tests.harness.migrations import migrate_back, newest

BEFORE = [("notifications", "0009_chat_url")]
AFTER = [("notifications", "0010_nudge_names")]
URL = "https://hooks.slack.com/services/T000/B000/secret"


def migrate(targets) -> None:
    MigrationExecutor(connection).migrate(targets)
    ContentType.objects.clear_cache()


def state(target):
    """The models at `target`, with every other app at its newest (as the
    database is: going back to 0009 reverts only notifications)."""
    loader = MigrationExecutor(connection).loader
    others = [node for node in loader.graph.leaf_nodes() if node[0] != "notifications"]
    return loader.project_state([*others, *target]).apps


def test_no_model_keeps_the_old_names():
    names = {model.__name__ for model in django_apps.get_models()}
    assert {"NudgeDelivery", "NudgeAttempt", "NudgeChannel", "TestNudge"} <= names
    assert not names & {"Delivery", "DeliveryAttempt", "NotificationChannel", "ChannelTest"}


@pytest.mark.django_db(transaction=True)
def test_the_rename_keeps_rows_content_types_and_permissions():
    migrate_back(BEFORE)
    try:
        apps = state(BEFORE)
        users = apps.get_model("accounts", "User").objects
        lead = users.create(email="lead@example.com", display_name="Lead")
        knight = users.create(email="knight@example.com", display_name="Knight")
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
        channel = apps.get_model("notifications", "NotificationChannel").objects.create(
            user=knight, kind="slack", chat_url=URL
        )
        delivery = apps.get_model("notifications", "Delivery").objects.create(
            event=event, recipient=knight, channel="slack", attempts=1
        )
        apps.get_model("notifications", "DeliveryAttempt").objects.create(
            delivery=delivery, channel="slack", outcome="transient", status_code=503
        )
        test = apps.get_model("notifications", "ChannelTest").objects.create(
            user=knight, kind="slack", status="sent"
        )
        types = apps.get_model("contenttypes", "ContentType").objects
        old_types = {
            model: types.get(app_label="notifications", model=model).pk
            for model in ("delivery", "deliveryattempt", "notificationchannel", "channeltest")
        }
        permissions = apps.get_model("auth", "Permission").objects
        change_delivery = permissions.get(codename="change_delivery").pk
        assert "notifications_delivery" in connection.introspection.table_names()

        migrate(AFTER)

        apps = state(AFTER)
        moved = apps.get_model("notifications", "NudgeChannel").objects.get(pk=channel.pk)
        assert (moved.user_id, moved.kind, moved.chat_url) == (knight.pk, "slack", URL)
        moved_delivery = apps.get_model("notifications", "NudgeDelivery").objects.get(
            pk=delivery.pk
        )
        assert (moved_delivery.event_id, moved_delivery.attempts) == (event.pk, 1)
        assert [(a.outcome, a.status_code) for a in moved_delivery.attempt_log.all()] == [
            ("transient", 503)
        ]
        moved_test = apps.get_model("notifications", "TestNudge").objects.get(pk=test.pk)
        assert (moved_test.user_id, moved_test.status) == (knight.pk, "sent")
        types = apps.get_model("contenttypes", "ContentType").objects
        new_types = {
            model: types.get(app_label="notifications", model=model).pk
            for model in ("nudgedelivery", "nudgeattempt", "nudgechannel", "testnudge")
        }
        assert sorted(new_types.values()) == sorted(old_types.values())
        permission = apps.get_model("auth", "Permission").objects.get(pk=change_delivery)
        assert (permission.codename, permission.name) == (
            "change_nudgedelivery",
            "Can change nudge delivery",
        )
        tables = connection.introspection.table_names()
        assert {"notifications_nudgedelivery", "notifications_nudgeattempt"} <= set(tables)
        assert {"notifications_nudgechannel", "notifications_testnudge"} <= set(tables)
        old_tables = {"notifications_delivery", "notifications_notificationchannel"}
        assert not (old_tables | {"notifications_channeltest"}) & set(tables)
    finally:
        newest()
