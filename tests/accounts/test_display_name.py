"""A display name is one line: it goes into mail subjects and headings, where
a line break ends a header. Every way of setting one refuses control
characters (the model's validator: the profile page, sign-up, the admin,
`create_user`), and names stored before the rule are folded to one line by
migration accounts 0004."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.harness.migrations import migrate_back, newest

pytestmark = pytest.mark.django_db

User = get_user_model()
ONE_LINE_ERROR = "A name is one line"
BAD_NAMES = ["Lead\r\nBcc: everyone@example.com", "Lead\nSecond line", "Tab\there", "Esc\x1b[2J"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_the_profile_page_refuses_a_name_with_control_characters(client, assigner, name):
    client.force_login(assigner)

    response = client.post("/settings/profile/", {"display_name": name, "timezone": "UTC"})

    assert response.status_code == 400
    assert ONE_LINE_ERROR in response.content.decode()
    assigner.refresh_from_db()
    assert assigner.display_name == "Lead"


def test_the_profile_page_still_takes_an_ordinary_name(client, assigner):
    client.force_login(assigner)

    client.post("/settings/profile/", {"display_name": "Łukasz «the» Lead", "timezone": "UTC"})

    assigner.refresh_from_db()
    assert assigner.display_name == "Łukasz «the» Lead"


def test_sign_up_refuses_a_name_with_a_line_break(client):
    response = client.post(
        "/accounts/signup/",
        {
            "email": "new.person@example.com",
            "password1": "a long enough passphrase",
            "password2": "a long enough passphrase",
            "display_name": "New\r\nPerson",
            "timezone": "UTC",
        },
    )

    assert response.status_code == 200
    assert ONE_LINE_ERROR in response.content.decode()
    assert not User.objects.filter(email="new.person@example.com").exists()


def test_the_admin_refuses_a_name_with_a_line_break(client, staff, assignee):
    client.force_login(staff)
    data = {
        "email": assignee.email,
        "display_name": "Knight\nBcc: everyone@example.com",
        "timezone": assignee.timezone,
        "is_active": "on",
        "date_joined_0": assignee.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": assignee.date_joined.strftime("%H:%M:%S"),
    }

    response = client.post(f"/admin/accounts/user/{assignee.pk}/change/", data)

    assert response.status_code == 200
    assert ONE_LINE_ERROR in response.content.decode()
    assignee.refresh_from_db()
    assert assignee.display_name == "Knight"


def test_create_user_refuses_a_name_with_a_line_break():
    with pytest.raises(CommandError, match=ONE_LINE_ERROR):
        call_command(
            "create_user",
            "someone@example.com",
            "--password",
            "a long enough passphrase",
            "--name",
            "Some\nOne",
            stdout=StringIO(),
        )

    assert not User.objects.exists()


def test_the_model_refuses_it_whoever_saves_through_full_clean(assignee):
    assignee.display_name = "Knight\u2028Second line"

    with pytest.raises(ValidationError) as caught:
        assignee.full_clean()

    assert ONE_LINE_ERROR in str(caught.value.message_dict["display_name"])


BEFORE = [("accounts", "0003_sessions_without_parked_requests")]
AFTER = [("accounts", "0004_display_name_one_line")]


def migrate(targets) -> None:
    MigrationExecutor(connection).migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_names_stored_before_the_rule_are_folded_to_one_line_and_others_kept():
    migrate_back(BEFORE)
    try:
        users = MigrationExecutor(connection).loader.project_state(BEFORE).apps
        people = users.get_model("accounts", "User").objects
        broken = people.create(email="a@example.com", display_name="Lead\r\n  Bcc:\tx").pk
        spaced = people.create(email="b@example.com", display_name="Two  spaces kept").pk
        migrate(AFTER)
        people = MigrationExecutor(connection).loader.project_state(AFTER).apps
        people = people.get_model("accounts", "User").objects
        assert people.get(pk=broken).display_name == "Lead Bcc: x"
        assert people.get(pk=spaced).display_name == "Two  spaces kept"
    finally:
        newest()
