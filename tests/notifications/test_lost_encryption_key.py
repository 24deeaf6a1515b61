"""A chat URL stored under a key that is no longer configured
(FIELD_ENCRYPTION_KEYS rotated without `reencrypt_secrets`): the channel is
broken with a clear message, nudges go by e-mail, and no page or admin page
fails."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core import mail

from audit.models import AuditEvent
from lib import jobs
from notifications import sending
from notifications.models import (
    LOST_URL_REASON,
    ChannelKind,
    NudgeChannel,
    NudgeDelivery,
    NudgeDeliveryStatus,
)
from notifications.services import notification_channel_set
from tests.harness.services import new_request_nudge

pytestmark = pytest.mark.django_db

OLD_KEY = Fernet.generate_key().decode()
NEW_KEY = Fernet.generate_key().decode()
URL = "https://hooks.slack.com/services/T000/B000/lost-secret"


@pytest.fixture(autouse=True)
def _settings(settings, monkeypatch):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.FIELD_ENCRYPTION_KEYS = [OLD_KEY]
    monkeypatch.setattr(jobs, "enqueue", lambda *args, **kwargs: True)
    mail.outbox = []


@pytest.fixture
def lost_channel(assignee, settings) -> NudgeChannel:
    """Knight's Slack channel, saved under OLD_KEY; only NEW_KEY is configured now."""
    channel = notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=URL)
    settings.FIELD_ENCRYPTION_KEYS = [NEW_KEY]
    return channel


def test_the_notifications_page_renders_and_says_the_channel_is_broken_and_why(
    client, assignee, lost_channel
):
    client.force_login(assignee)
    response = client.get("/settings/notifications/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Slack stopped taking nudges" in html
    assert "stored with an encryption key that is no longer configured; enter the URL again" in html
    assert "Nudges go to:\n    <strong>E-mail</strong>" in html


def test_the_channel_is_marked_broken_with_that_message_once(client, assignee, lost_channel):
    client.force_login(assignee)
    client.get("/settings/notifications/")
    client.get("/settings/notifications/")
    channel = NudgeChannel.objects.get(pk=lost_channel.pk)
    assert channel.is_broken and channel.broken_at is not None
    assert channel.broken_reason == LOST_URL_REASON
    (event,) = AuditEvent.objects.filter(action="notification_channel_broken")
    assert event.payload == {"kind": "slack", "reason": LOST_URL_REASON}


def test_the_admin_list_and_change_pages_render(staff_client, lost_channel):
    listing = staff_client.get("/admin/notifications/nudgechannel/")
    assert listing.status_code == 200
    assert "(unreadable)" in listing.content.decode()
    page = staff_client.get(f"/admin/notifications/nudgechannel/{lost_channel.pk}/change/")
    assert page.status_code == 200


def test_a_nudge_goes_by_email(assigner, assignee, lost_channel):
    delivery_id = new_request_nudge(assigner, assignee)
    assert sending.nudge_send(delivery_id=delivery_id) == "delivered"
    delivery = NudgeDelivery.objects.get(pk=delivery_id)
    assert (delivery.status, delivery.channel) == (NudgeDeliveryStatus.DELIVERED, ChannelKind.EMAIL)
    (sent,) = mail.outbox
    assert sent.to == ["knight@example.com"]
    assert NudgeChannel.objects.get(pk=lost_channel.pk).broken_reason == LOST_URL_REASON


def test_a_nudge_already_meant_for_slack_falls_back_to_email(assigner, assignee, settings):
    notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=URL)
    delivery_id = new_request_nudge(assigner, assignee)
    assert NudgeDelivery.objects.get(pk=delivery_id).channel == ChannelKind.SLACK
    settings.FIELD_ENCRYPTION_KEYS = [NEW_KEY]  # rotated before the worker sent it

    assert sending.nudge_send(delivery_id=delivery_id) == "delivered"

    assert NudgeDelivery.objects.get(pk=delivery_id).channel == ChannelKind.EMAIL
    assert [m.to for m in mail.outbox] == [["knight@example.com"]]


def test_a_test_send_says_the_url_must_be_entered_again(client, assignee, lost_channel):
    from notifications.services import test_nudge_request, test_nudge_send

    test = test_nudge_request(user=assignee)
    assert test_nudge_send(test_id=test.pk) == "failed"
    assert mail.outbox == []
    client.force_login(assignee)
    html = client.get("/settings/notifications/").content.decode()
    assert "Slack did not take the test message: " + LOST_URL_REASON in html


def test_entering_the_url_again_mends_the_channel(client, assignee, lost_channel):
    client.force_login(assignee)
    refused = client.post("/settings/notifications/", {"kind": "slack", "chat_url": ""})
    assert refused.status_code == 400  # the lost URL cannot be kept
    client.post("/settings/notifications/", {"kind": "slack", "chat_url": URL + "-new"})
    channel = NudgeChannel.objects.get(pk=lost_channel.pk)
    assert channel.chat_url == URL + "-new" and not channel.is_broken


def test_saving_another_field_keeps_the_stored_ciphertext(lost_channel, settings):
    from django.db import connection

    def raw() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SELECT chat_url FROM notifications_nudgechannel")
            return cursor.fetchone()[0]

    before = raw()
    channel = NudgeChannel.objects.get(pk=lost_channel.pk)
    channel.save()
    assert raw() == before
    settings.FIELD_ENCRYPTION_KEYS = [NEW_KEY, OLD_KEY]  # the key is found again
    assert NudgeChannel.objects.get(pk=lost_channel.pk).chat_url == URL
