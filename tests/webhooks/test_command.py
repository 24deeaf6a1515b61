"""manage.py add_webhook_endpoint EMAIL --system SLUG --url URL: registers an
endpoint as the Webhooks page does and prints its signing secret as the
last line; refuses clearly, with a non-zero exit, what the page refuses."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import base, call_command

from audit.models import AuditEvent
from tests.harness.webhook_pages import RECEIVER, resolve_every_name_to
from webhooks.management.commands.add_webhook_endpoint import Command
from webhooks.models import WebhookEndpoint

SECRET = re.compile(r"^whsec_[A-Za-z0-9+/]{43}=$")

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _production_network(settings, monkeypatch):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    resolve_every_name_to(monkeypatch)


@pytest.fixture(autouse=True)
def _keep_the_test_connection(monkeypatch):
    # run_from_argv closes every database connection when it ends, as a
    # process about to exit would; the test's transaction lives on one.
    monkeypatch.setattr(base.connections, "close_all", lambda: None)


def run(*args: str) -> tuple[int, str, str]:
    """The command as manage.py runs it (run_from_argv, which turns a
    CommandError into a message and exit status 1): status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    command = Command(stdout=out, stderr=err)
    try:
        command.run_from_argv(["manage.py", "add_webhook_endpoint", *args])
    except SystemExit as exit_:
        assert isinstance(exit_.code, int)  # run_from_argv exits with a status
        return exit_.code, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def test_it_registers_the_endpoint_and_prints_the_secret_as_the_last_line(assigner):
    status, out, err = run("LEAD@example.com", "--system", "jira", "--url", RECEIVER)

    assert status == 0
    secret = out.splitlines()[-1]
    assert SECRET.match(secret)
    endpoint = WebhookEndpoint.objects.get(user=assigner)
    assert (endpoint.external_system, endpoint.url, endpoint.secret) == ("jira", RECEIVER, secret)
    assert secret not in err and "jira" in err and "not shown again" in err
    event = AuditEvent.objects.get(action="webhook_endpoint_created")
    assert event.actor_kind == "system"


def test_call_command_works_for_scripts(assigner):
    out = io.StringIO()
    call_command("add_webhook_endpoint", assigner.email, system="jira", url=RECEIVER, stdout=out)
    assert SECRET.match(out.getvalue().splitlines()[-1])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["nobody@example.com", "--system", "jira", "--url", RECEIVER],
            "No user has the e-mail 'nobody@example.com'.",
        ),
        (
            ["lead@example.com", "--system", "jira", "--url", "http://hooks.example.com/x"],
            "The URL must start with https://.",
        ),
        (
            ["lead@example.com", "--system", "jira", "--url", "https://169.254.169.254/"],
            "The URL points to a link-local address.",
        ),
        (
            ["lead@example.com", "--system", "jira", "--url", "https://10.0.0.1/"],
            "The URL points to a private address.",
        ),
    ],
)
def test_it_refuses_with_a_clear_message_and_a_non_zero_exit(assigner, args, message):
    status, out, err = run(*args)

    assert status != 0
    assert message in err
    assert out == ""
    assert not WebhookEndpoint.objects.exists()


def test_a_second_endpoint_for_the_same_system_is_refused(assigner):
    assert run("lead@example.com", "--system", "jira", "--url", RECEIVER)[0] == 0

    status, out, err = run("lead@example.com", "--system", "jira", "--url", RECEIVER + "/2")

    assert status != 0 and out == ""
    assert "You already have an endpoint for jira." in err
    assert WebhookEndpoint.objects.get().url == RECEIVER


def test_a_deactivated_user_is_refused(make_user):
    make_user("gone@example.com", is_active=False)
    status, out, err = run("gone@example.com", "--system", "jira", "--url", RECEIVER)
    assert status != 0 and "deactivated" in err and out == ""
    assert not WebhookEndpoint.objects.exists()


def test_the_system_and_the_url_are_required(assigner, capsys):
    with pytest.raises(SystemExit):
        Command().run_from_argv(["manage.py", "add_webhook_endpoint", "lead@example.com"])
    assert "--system" in capsys.readouterr().err
