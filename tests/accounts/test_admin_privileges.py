"""Only a superuser gives privileges. Three people: a superuser, a staff member
who may manage users and groups but is no superuser, and the target."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

pytestmark = pytest.mark.django_db

User = get_user_model()
USERS = "/admin/accounts/user/"
GROUPS = "/admin/auth/group/"
MANAGER_PERMS = [
    "view_user",
    "change_user",
    "add_user",
    "delete_user",
    "view_group",
    "change_group",
]


def perm(codename: str) -> Permission:
    return Permission.objects.get(codename=codename)


@pytest.fixture
def superuser(staff):
    return staff  # staff@example.com, is_superuser


@pytest.fixture
def manager(make_user):
    user = make_user("manager@example.com", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=MANAGER_PERMS))
    return user


@pytest.fixture
def target(make_user):
    return make_user("target@example.com", display_name="Target")


@pytest.fixture
def manager_client(client, manager):
    client.force_login(manager)
    return client


@pytest.fixture
def everything():
    group = Group.objects.create(name="Everything")
    group.permissions.set(Permission.objects.all())
    return group


def user_form(user, **changes) -> dict:
    data = {
        "email": user.email,
        "display_name": user.display_name,
        "timezone": user.timezone,
        "is_active": "on",
        "date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
        **({"is_staff": "on"} if user.is_staff else {}),
    }
    data.update(changes)
    return data


def fresh(user):
    user = User.objects.get(pk=user.pk)
    return user, set(user.groups.all()), set(user.user_permissions.all())


@pytest.mark.parametrize("who", ["target", "manager"])
def test_staff_cannot_make_anyone_a_superuser(manager_client, manager, target, who):
    person = {"target": target, "manager": manager}[who]

    response = manager_client.post(
        f"{USERS}{person.pk}/change/", user_form(person, is_superuser="on")
    )

    assert response.status_code == 302  # saved, without the flag
    assert not fresh(person)[0].is_superuser


@pytest.mark.parametrize("who", ["target", "manager"])
def test_staff_cannot_grant_groups_or_permissions(manager_client, manager, target, everything, who):
    person = {"target": target, "manager": manager}[who]
    before = fresh(person)

    manager_client.post(
        f"{USERS}{person.pk}/change/",
        user_form(
            person,
            groups=[str(everything.pk)],
            user_permissions=[str(perm("delete_commitment").pk), str(perm("add_permission").pk)],
        ),
    )

    after = fresh(person)
    assert (after[1], after[2]) == (before[1], before[2])
    assert not after[0].has_perm("commitments.delete_commitment")


def test_staff_add_a_user_without_privileges(manager_client):
    response = manager_client.post(
        f"{USERS}add/",
        {
            "email": "hire@example.com",
            "usable_password": "true",
            "password1": "a long enough passphrase",
            "password2": "a long enough passphrase",
            "is_superuser": "on",
        },
    )

    assert response.status_code == 302
    assert not User.objects.get(email="hire@example.com").is_superuser


def test_staff_see_privileges_read_only(manager_client, target):
    html = manager_client.get(f"{USERS}{target.pk}/change/").content.decode()

    assert 'name="display_name"' in html  # the rest is editable
    for field in ("is_superuser", "groups", "user_permissions"):
        assert f'name="{field}"' not in html


def test_staff_keep_a_users_existing_privileges_when_editing_other_fields(
    manager_client, target, everything
):
    target.groups.add(everything)

    manager_client.post(f"{USERS}{target.pk}/change/", user_form(target, display_name="T"))

    user, groups, _ = fresh(target)
    assert user.display_name == "T"
    assert groups == {everything}


def test_staff_cannot_widen_a_group(manager_client, manager, everything):
    mine = Group.objects.create(name="Managers")
    manager.groups.add(mine)

    manager_client.post(
        f"{GROUPS}{mine.pk}/change/",
        {"name": "Managers", "permissions": [str(perm("delete_commitment").pk)]},
    )

    assert not mine.permissions.exists()
    assert not fresh(manager)[0].has_perm("commitments.delete_commitment")


def test_staff_cannot_change_a_superuser(manager_client, superuser):
    response = manager_client.post(
        f"{USERS}{superuser.pk}/change/",
        user_form(superuser, is_superuser="on", display_name="Renamed", is_active=""),
    )

    assert response.status_code == 403
    user = fresh(superuser)[0]
    assert (user.display_name, user.is_active) == (superuser.display_name, True)


def test_staff_cannot_set_a_superusers_password(manager_client, superuser):
    response = manager_client.post(
        f"{USERS}{superuser.pk}/password/",
        {
            "usable_password": "true",
            "password1": "taken over at last",
            "password2": "taken over at last",
        },
    )

    assert response.status_code == 403
    assert not fresh(superuser)[0].check_password("taken over at last")


def test_staff_cannot_delete_a_superuser(manager_client, superuser):
    page = manager_client.post(f"{USERS}{superuser.pk}/delete/", {"post": "yes"})
    action = manager_client.post(
        USERS,
        {"action": "delete_selected", "_selected_action": [str(superuser.pk)], "post": "yes"},
    )

    assert page.status_code == 403
    assert action.status_code == 403
    assert User.objects.filter(pk=superuser.pk).exists()


def test_a_superuser_grants_superuser_groups_and_permissions(client, superuser, target, everything):
    client.force_login(superuser)

    response = client.post(
        f"{USERS}{target.pk}/change/",
        user_form(
            target,
            is_staff="on",
            is_superuser="on",
            groups=[str(everything.pk)],
            user_permissions=[str(perm("delete_commitment").pk)],
        ),
    )

    assert response.status_code == 302
    user, groups, permissions = fresh(target)
    assert user.is_superuser and user.is_staff
    assert groups == {everything}
    assert permissions == {perm("delete_commitment")}
