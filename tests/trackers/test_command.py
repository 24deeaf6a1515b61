"""manage.py add_tracker_connection: the receiving URL on one line, the secret
as the last line; bad input is an error and writes nothing."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from tests.harness.trackers import deliver
from trackers.models import TrackerConnection

pytestmark = pytest.mark.django_db


def run(*args: str) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("add_tracker_connection", *args, stdout=out, stderr=err)
    return out.getvalue().splitlines()


def test_it_prints_the_url_then_the_secret_and_the_hook_works(client, settings, assigner, assignee):
    settings.SITE_URL = "https://commitments.example.com"
    lines = run(
        "LEAD@example.com",
        "--kind",
        "github",
        "--system",
        "acme",
        "--map",
        "knight-gh=knight@example.com",
        "--map",
        "squire=squire@example.com",
    )
    url, secret = lines[0], lines[-1]
    connection = TrackerConnection.objects.get()
    assert url == f"https://commitments.example.com/api/v1/hooks/{connection.hook_id}"
    assert len(connection.hook_id) >= 32
    assert (connection.owner, connection.kind, connection.system) == (assigner, "github", "acme")
    assert connection.identity_map == {
        "knight-gh": "knight@example.com",
        "squire": "squire@example.com",
    }
    assert connection.secret == secret
    # Stored encrypted: the column does not hold the plaintext.
    from django.db import connection as db

    with db.cursor() as cursor:
        cursor.execute("SELECT secret FROM trackers_trackerconnection")
        assert secret not in cursor.fetchone()[0]
    from tests.harness.tracker_payloads import issues_event

    assert deliver(client, connection, secret, issues_event("assigned")).status_code == 200


def test_the_system_defaults_to_the_kind(assigner):
    run("lead@example.com", "--kind", "linear")
    assert TrackerConnection.objects.get().system == "linear"


@pytest.mark.parametrize(
    "args, message",
    [
        (["nobody@example.com", "--kind", "github"], "No user"),
        (["lead@example.com", "--kind", "github", "--map", "knight"], "LOGIN=EMAIL"),
        (["lead@example.com", "--kind", "github", "--map", "k=not-an-address"], "e-mail"),
        (["lead@example.com", "--kind", "github", "--system", "x" * 33], "externalSystem"),
        (["lead@example.com", "--kind", "github", "--system", "   "], None),
    ],
)
def test_bad_input_is_an_error_and_writes_nothing(assigner, args, message):
    if message is None:  # a blank system falls back to the kind: that one is fine
        run(*args)
        assert TrackerConnection.objects.get().system == "github"
        return
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert TrackerConnection.objects.count() == 0


def test_an_unknown_kind_is_refused(assigner):
    with pytest.raises(CommandError):
        run("lead@example.com", "--kind", "trello")
    assert TrackerConnection.objects.count() == 0


def test_a_second_connection_for_the_same_system_is_refused(assigner):
    run("lead@example.com", "--kind", "github", "--system", "acme")
    with pytest.raises(CommandError, match="already"):
        run("lead@example.com", "--kind", "gitlab", "--system", "acme")
    assert TrackerConnection.objects.count() == 1


def test_a_person_has_at_most_max_connections(assigner, monkeypatch):
    from trackers import services

    monkeypatch.setattr(services, "MAX_CONNECTIONS", 2)
    run("lead@example.com", "--kind", "github")
    run("lead@example.com", "--kind", "gitlab")
    with pytest.raises(CommandError, match="the most one person may have"):
        run("lead@example.com", "--kind", "jira")
    assert TrackerConnection.objects.count() == 2
