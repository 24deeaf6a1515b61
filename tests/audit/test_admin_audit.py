"""Every staff action in the Django admin is on the audit trail, with the staff
user as actor: additions, changes (with the changed fields, and for users
their privileges), deletions, and the admin's own actions."""

from __future__ import annotations

import json

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

from audit.admin_mixins import AuditedAdminMixin
from audit.models import AuditEvent
from tests.harness.services import new_request_nudge

pytestmark = pytest.mark.django_db

User = get_user_model()
USERS = "/admin/accounts/user/"
GROUPS = "/admin/auth/group/"


def admin_events(action: str | None = None) -> list[AuditEvent]:
    found = AuditEvent.objects.filter(action__startswith="admin_")
    if action:
        found = found.filter(action=action)
    return list(found)


def user_form(user, **changes) -> dict:
    """The change form of `user` as the admin shows it, with `changes` applied."""
    data = {
        "email": user.email,
        "display_name": user.display_name,
        "timezone": user.timezone,
        "is_active": "on" if user.is_active else "",
        "is_staff": "on" if user.is_staff else "",
        "is_superuser": "on" if user.is_superuser else "",
        "groups": [str(g.pk) for g in user.groups.all()],
        "user_permissions": [str(p.pk) for p in user.user_permissions.all()],
        "last_login_0": "",
        "last_login_1": "",
        "date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v != ""}


def perm(codename: str) -> Permission:
    return Permission.objects.get(codename=codename)


def test_every_registered_model_admin_is_audited():
    unaudited = [
        model._meta.label
        for model, model_admin in admin.site._registry.items()
        if not isinstance(model_admin, AuditedAdminMixin)
    ]

    assert unaudited == []
    assert Group in admin.site._registry


def test_adding_a_user_is_recorded_without_the_password(staff_client, staff):
    staff_client.post(
        f"{USERS}add/",
        {
            "email": "new@example.com",
            "usable_password": "true",
            "password1": "a long enough passphrase",
            "password2": "a long enough passphrase",
        },
    )

    new = User.objects.get(email="new@example.com")
    (event,) = admin_events("admin_added")
    assert (event.actor_kind, event.user, event.subject) == ("user", staff, new)
    assert event.payload["object"] == {
        "model": "accounts.user",
        "id": str(new.pk),
        "repr": "new@example.com",
    }
    assert "email" in event.payload["fields"] and "password" in event.payload["fields"]
    assert "a long enough passphrase" not in json.dumps(event.payload)
    assert new.password not in json.dumps(event.payload)


def test_granting_privileges_to_a_user_is_recorded_with_old_and_new_values(
    staff_client, staff, assignee
):
    editors = Group.objects.create(name="Editors")

    response = staff_client.post(
        f"{USERS}{assignee.pk}/change/",
        user_form(
            assignee,
            is_staff="on",
            is_superuser="on",
            groups=[str(editors.pk)],
            user_permissions=[str(perm("view_commitment").pk)],
        ),
    )

    assert response.status_code == 302, response.context["adminform"].form.errors
    (event,) = admin_events("admin_changed")
    assert (event.user, event.subject) == (staff, assignee)
    assert set(event.payload["fields"]) == {
        "is_staff",
        "is_superuser",
        "groups",
        "user_permissions",
    }
    assert event.payload["changes"] == {
        "is_staff": {"old": False, "new": True},
        "is_superuser": {"old": False, "new": True},
        "groups": {"added": ["Editors"], "removed": []},
        "user_permissions": {"added": ["commitments.view_commitment"], "removed": []},
    }


def test_taking_permissions_away_is_recorded_too(staff_client, staff, assignee):
    assignee.user_permissions.add(perm("view_commitment"), perm("view_auditevent"))

    staff_client.post(
        f"{USERS}{assignee.pk}/change/",
        user_form(assignee, user_permissions=[str(perm("view_auditevent").pk)]),
    )

    (event,) = admin_events("admin_changed")
    assert event.payload["changes"] == {
        "user_permissions": {"added": [], "removed": ["commitments.view_commitment"]}
    }


def test_setting_a_password_in_the_admin_is_recorded_without_it(staff_client, staff, assignee):
    old_hash = assignee.password

    response = staff_client.post(
        f"{USERS}{assignee.pk}/password/",
        {
            "usable_password": "true",
            "password1": "a brand new passphrase",
            "password2": "a brand new passphrase",
            "set-password": "",
        },
    )

    assert response.status_code == 302
    (event,) = admin_events("admin_changed")
    assert (event.user, event.subject) == (staff, assignee)
    assert event.payload["fields"] == ["password"]
    text = json.dumps(event.payload)
    assert "a brand new passphrase" not in text and old_hash not in text
    assignee.refresh_from_db()
    assert assignee.password not in text


def test_deleting_a_user_is_recorded_before_the_row_goes(staff_client, staff, make_user):
    leaving = make_user("leaving@example.com")

    response = staff_client.post(f"{USERS}{leaving.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not User.objects.filter(pk=leaving.pk).exists()
    (event,) = admin_events("admin_deleted")
    assert (event.user, event.subject_id) == (staff, leaving.pk)
    assert event.payload["object"]["repr"] == "leaving@example.com"


def test_deleting_selected_users_records_each(staff_client, staff, make_user):
    leaving = [make_user(f"leaving{i}@example.com") for i in range(2)]

    staff_client.post(
        USERS,
        {
            "action": "delete_selected",
            "_selected_action": [str(u.pk) for u in leaving],
            "post": "yes",
        },
    )

    assert {e.subject_id for e in admin_events("admin_deleted")} == {u.pk for u in leaving}


def test_a_group_change_names_the_group_and_hangs_on_the_staff_user(staff_client, staff):
    # A group's key is an integer; an event's subject is a UUID.
    editors = Group.objects.create(name="Editors")

    staff_client.post(
        f"{GROUPS}{editors.pk}/change/",
        {"name": "Editors", "permissions": [str(perm("view_commitment").pk)]},
    )

    (event,) = admin_events("admin_changed")
    assert (event.user, event.subject) == (staff, staff)
    assert event.payload["object"] == {
        "model": "auth.group",
        "id": str(editors.pk),
        "repr": "Editors",
    }
    assert event.payload["changes"] == {
        "permissions": {"added": ["commitments.view_commitment"], "removed": []}
    }


def test_clearing_a_broken_channel_is_recorded_per_channel(staff_client, staff, assignee):
    from notifications.models import ChannelKind, NudgeChannel
    from notifications.services import notification_channel_mark_broken, notification_channel_set

    secret_url = "https://hooks.slack.com/services/T000/B000/secret"
    channel = notification_channel_set(user=assignee, kind=ChannelKind.SLACK, chat_url=secret_url)
    notification_channel_mark_broken(
        channel_id=channel.pk, failed_url=secret_url, reason="Slack says 404 at " + secret_url
    )

    staff_client.post(
        "/admin/notifications/nudgechannel/",
        {"action": "clear_broken", "_selected_action": [str(channel.pk)]},
    )

    assert not NudgeChannel.objects.get(pk=channel.pk).is_broken
    (event,) = admin_events("admin_channel_broken_cleared")
    assert (event.user, event.subject) == (staff, channel)
    assert "secret" not in json.dumps(event.payload)


def test_retrying_a_delivery_is_recorded_per_delivery(
    staff_client, staff, assigner, assignee, settings
):
    from notifications import sending
    from notifications.models import NudgeDelivery

    delivery_id = new_request_nudge(assigner, assignee)
    settings.EMAIL_BACKEND = "tests.notifications.test_transports.DownBackend"
    sending.nudge_send(delivery_id=delivery_id)

    staff_client.post(
        "/admin/notifications/nudgedelivery/",
        {"action": "retry_now", "_selected_action": [str(delivery_id)]},
    )

    (event,) = admin_events("admin_delivery_retried")
    assert (event.user, event.subject) == (staff, NudgeDelivery.objects.get(pk=delivery_id))
    assert event.payload["attempts"] == 1
