"""Only a superuser gives privileges, and staff cannot climb. Three people: a
superuser, a staff member who may manage users and groups but is no
superuser, and the target; and, for climbing, a staff member holding only
`change_user` (and `view_user`) against accounts that hold more."""

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

    # The target's form is saved without the flag; the manager's own (a staff
    # account) is a superuser's to change.
    assert response.status_code == {"target": 302, "manager": 403}[who]
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
    for field in ("is_staff", "is_superuser", "groups", "user_permissions"):
        assert f'name="{field}"' not in html


def test_staff_keep_a_users_existing_privileges_when_editing_other_fields(manager_client, target):
    viewers = Group.objects.create(name="Viewers")
    viewers.permissions.add(perm("view_user"))  # the manager holds it too
    target.groups.add(viewers)
    target.user_permissions.add(perm("view_group"))

    response = manager_client.post(
        f"{USERS}{target.pk}/change/", user_form(target, display_name="T")
    )

    assert response.status_code == 302
    user, groups, permissions = fresh(target)
    assert user.display_name == "T"
    assert (groups, permissions) == ({viewers}, {perm("view_group")})


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


# --- staff cannot climb ------------------------------------------------------------------

TAKEN_OVER = "taken over at last"


@pytest.fixture
def climber(make_user):
    """Staff holding only `change_user` (and `view_user`, to open the form)."""
    user = make_user("climber@example.com", is_staff=True)
    user.user_permissions.add(perm("view_user"), perm("change_user"))
    return user


@pytest.fixture
def climber_client(client, climber):
    client.force_login(climber)
    return client


def above(make_user, how: str):
    """An account that holds more than the climber, in one of several ways."""
    if how == "staff, fewer permissions":
        user = make_user("colleague@example.com", is_staff=True)
        user.user_permissions.add(perm("view_user"))
    elif how == "staff, no permissions":
        user = make_user("colleague@example.com", is_staff=True)
    elif how == "a permission of its own":
        user = make_user("power@example.com")
        user.user_permissions.add(perm("delete_commitment"))
    elif how == "a permission through a group":
        user = make_user("power@example.com")
        group = Group.objects.create(name="Deleters")
        group.permissions.add(perm("change_commitment"))
        user.groups.add(group)
    else:  # an inactive account: its permissions count all the same
        user = make_user("dormant@example.com", is_active=False)
        user.user_permissions.add(perm("delete_commitment"))
    return user


HIGHER = [
    "staff, fewer permissions",
    "staff, no permissions",
    "a permission of its own",
    "a permission through a group",
    "inactive, with a permission",
]


def set_password(client, user, password: str = TAKEN_OVER):
    return client.post(
        f"{USERS}{user.pk}/password/",
        {"usable_password": "true", "password1": password, "password2": password},
    )


@pytest.mark.parametrize("how", HIGHER)
def test_staff_cannot_set_the_password_of_anyone_above_them(climber_client, make_user, how):
    victim = above(make_user, how)

    assert climber_client.get(f"{USERS}{victim.pk}/password/").status_code == 403
    assert set_password(climber_client, victim).status_code == 403
    assert not fresh(victim)[0].check_password(TAKEN_OVER)


@pytest.mark.parametrize("how", HIGHER)
def test_staff_cannot_change_the_email_or_anything_of_anyone_above_them(
    climber_client, make_user, how
):
    victim = above(make_user, how)
    before = fresh(victim)

    page = climber_client.get(f"{USERS}{victim.pk}/change/")
    response = climber_client.post(
        f"{USERS}{victim.pk}/change/",
        user_form(victim, email="attacker@example.com", display_name="Mine", is_active="on"),
    )

    assert page.status_code == 200 and 'name="email"' not in page.content.decode()  # read only
    assert response.status_code == 403
    assert fresh(victim) == before
    assert (before[0].email, before[0].display_name) == (victim.email, victim.display_name)


@pytest.mark.parametrize("how", HIGHER)
def test_staff_cannot_delete_anyone_above_them(client, make_user, how):
    remover = make_user("remover@example.com", is_staff=True)
    remover.user_permissions.add(perm("view_user"), perm("change_user"), perm("delete_user"))
    victim = above(make_user, how)
    client.force_login(remover)

    page = client.post(f"{USERS}{victim.pk}/delete/", {"post": "yes"})
    action = client.post(
        USERS, {"action": "delete_selected", "_selected_action": [str(victim.pk)], "post": "yes"}
    )

    assert (page.status_code, action.status_code) == (403, 403)
    assert User.objects.filter(pk=victim.pk).exists()


def test_staff_cannot_change_their_own_staff_account_in_the_admin(climber_client, climber):
    response = climber_client.post(
        f"{USERS}{climber.pk}/change/", user_form(climber, email="other@example.com")
    )

    assert response.status_code == 403
    assert set_password(climber_client, climber).status_code == 403
    user = fresh(climber)[0]
    assert user.email == "climber@example.com" and not user.check_password(TAKEN_OVER)


def test_staff_cannot_make_anyone_staff(climber_client, make_user):
    plain = make_user("plain@example.com")

    response = climber_client.post(f"{USERS}{plain.pk}/change/", user_form(plain, is_staff="on"))

    assert response.status_code == 302  # saved, without the flag
    assert not fresh(plain)[0].is_staff


def test_staff_still_manage_an_account_that_holds_no_more_than_they_do(climber_client, make_user):
    plain = make_user("plain@example.com")
    plain.user_permissions.add(perm("view_user"))  # the climber holds it too

    changed = climber_client.post(
        f"{USERS}{plain.pk}/change/", user_form(plain, email="moved@example.com")
    )
    reset = set_password(climber_client, plain, "a new long passphrase")

    assert (changed.status_code, reset.status_code) == (302, 302)
    user = fresh(plain)[0]
    assert user.email == "moved@example.com" and user.check_password("a new long passphrase")


@pytest.mark.parametrize("how", HIGHER)
def test_a_superuser_changes_and_resets_any_account(client, superuser, make_user, how):
    victim = above(make_user, how)
    client.force_login(superuser)

    changed = client.post(
        f"{USERS}{victim.pk}/change/",
        user_form(victim, email="renamed@example.com", is_active="on" if victim.is_active else ""),
    )
    reset = set_password(client, victim, "set by the superuser")

    assert (changed.status_code, reset.status_code) == (302, 302)
    user = fresh(victim)[0]
    assert user.email == "renamed@example.com" and user.check_password("set by the superuser")
