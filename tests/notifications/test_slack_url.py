"""A Slack channel takes only a URL that looks like Slack's incoming webhook
(https://hooks.slack.com/...), checked on the server whatever the page hid."""

from __future__ import annotations

import pytest

from notifications.models import ChannelKind, NudgeChannel

pytestmark = pytest.mark.django_db
PAGE = "/settings/notifications/"


@pytest.fixture
def knight(client, assignee, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    client.force_login(assignee)
    return client


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/services/T0/B0/x",
        "https://hooks.slack.com.evil.example/services/x",
        "https://example.logic.azure.com/workflows/1",
    ],
)
def test_a_slack_channel_refuses_a_url_that_is_not_slacks(knight, assignee, url):
    response = knight.post(PAGE, {"kind": "slack", "chat_url": url})

    assert response.status_code == 400
    assert "starts with https://hooks.slack.com/" in response.content.decode()
    assert not NudgeChannel.objects.filter(user=assignee).exists()


def test_a_slack_url_is_taken(knight, assignee):
    url = "https://hooks.slack.com/services/T000/B000/secret"
    assert knight.post(PAGE, {"kind": "slack", "chat_url": url}).status_code == 302
    assert NudgeChannel.objects.get(user=assignee).kind == ChannelKind.SLACK


def test_teams_keeps_its_own_urls(knight, assignee):
    url = "https://example.logic.azure.com/workflows/1"
    assert knight.post(PAGE, {"kind": "teams", "chat_url": url}).status_code == 302


def test_a_local_receiver_stands_in_for_slack_only_where_loopback_is_allowed(
    knight, assignee, settings
):
    url = "http://127.0.0.1:9/services/T000/B000/secret"
    assert knight.post(PAGE, {"kind": "slack", "chat_url": url}).status_code == 302

    settings.OUTBOUND_ALLOW_LOOPBACK = False
    NudgeChannel.objects.all().delete()
    assert knight.post(PAGE, {"kind": "slack", "chat_url": url}).status_code == 400
