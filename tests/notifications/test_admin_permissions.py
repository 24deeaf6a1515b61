"""The nudge admin's two actions are offered to staff by the models' change
permission as it is named now (`change_nudgechannel`, `change_nudgedelivery`,
since notifications 0010), not only to superusers, and never to staff who may
only view."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from notifications.models import ChannelKind
from notifications.services import notification_channel_mark_broken, notification_channel_set
from tests.harness.services import new_request_nudge

pytestmark = pytest.mark.django_db

CHANNELS = "/admin/notifications/nudgechannel/"
DELIVERIES = "/admin/notifications/nudgedelivery/"
SLACK = "https://hooks.slack.com/services/T000/B000/secret"


def staff_with(client, make_user, *codenames: str):
    """A staff member (not a superuser) with just these permissions, signed in."""
    member = make_user("operator@example.com", is_staff=True)
    member.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client.force_login(member)
    return member


def offered_actions(client, url: str) -> list[str]:
    response = client.get(url)
    assert response.status_code == 200
    form = response.context["action_form"]  # None when no action is offered
    return [name for name, _ in form.fields["action"].choices] if form else []


@pytest.mark.parametrize(
    ("url", "model", "action"),
    [(CHANNELS, "nudgechannel", "clear_broken"), (DELIVERIES, "nudgedelivery", "retry_now")],
)
def test_an_action_is_offered_with_the_change_permission_and_not_without(
    client, make_user, url, model, action
):
    member = staff_with(client, make_user, f"view_{model}")
    assert action not in offered_actions(client, url)

    member.user_permissions.add(Permission.objects.get(codename=f"change_{model}"))
    assert action in offered_actions(client, url)


def test_staff_with_the_change_permission_clear_a_broken_channel(client, make_user, assignee):
    channel = notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=SLACK)
    notification_channel_mark_broken(channel_id=channel.pk, failed_url=SLACK, reason="Slack: 404")
    staff_with(client, make_user, "view_nudgechannel", "change_nudgechannel")

    client.post(CHANNELS, {"action": "clear_broken", "_selected_action": [str(channel.pk)]})

    channel.refresh_from_db()
    assert not channel.is_broken


def test_staff_with_the_change_permission_send_a_failed_delivery_again(
    client, make_user, assigner, assignee, settings
):
    from notifications import sending
    from notifications.models import NudgeDelivery

    delivery_id = new_request_nudge(assigner, assignee)
    settings.EMAIL_BACKEND = "tests.notifications.test_transports.DownBackend"
    sending.nudge_send(delivery_id=delivery_id)
    assert NudgeDelivery.objects.get(pk=delivery_id).attempts == 1  # waiting for its retry
    staff_with(client, make_user, "view_nudgedelivery", "change_nudgedelivery")

    response = client.post(
        DELIVERIES, {"action": "retry_now", "_selected_action": [str(delivery_id)]}, follow=True
    )

    assert "Queued 1 delivery(ies) again." in response.content.decode()
    assert NudgeDelivery.objects.get(pk=delivery_id).attempts == 0  # a fresh count
