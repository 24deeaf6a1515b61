"""manage.py set_provider_key EMAIL --provider openai|anthropic [--model M]:
the key comes from standard input, never the command line; the newest
stored key becomes the user's default; clear refusals exit 1."""

from __future__ import annotations

import io

import pytest
from django.core.management import base, call_command

from audit.models import AuditEvent
from gather import selectors
from gather.management.commands.set_provider_key import Command
from gather.models import ModelKey

pytestmark = pytest.mark.django_db

KEY = "sk-ant-from-stdin-0123456789-WXYZ"


@pytest.fixture(autouse=True)
def _keep_the_test_connection(monkeypatch):
    # run_from_argv closes every database connection when it ends.
    monkeypatch.setattr(base.connections, "close_all", lambda: None)


def run(*args: str, stdin: str, monkeypatch) -> tuple[int, str, str]:
    """As manage.py runs it: status, stdout, stderr."""
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    out, err = io.StringIO(), io.StringIO()
    command = Command(stdout=out, stderr=err)
    try:
        command.run_from_argv(["manage.py", "set_provider_key", *args])
    except SystemExit as exit_:
        return int(exit_.code), out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def test_it_reads_the_key_from_stdin_and_confirms_with_the_last_four(assigner, monkeypatch):
    status, out, err = run(
        "LEAD@example.com", "--provider", "anthropic", stdin=f"{KEY}\n", monkeypatch=monkeypatch
    )

    assert status == 0
    stored = ModelKey.objects.get(user=assigner)
    assert (stored.provider, stored.key, stored.is_default) == ("anthropic", KEY, True)
    assert "…WXYZ" in out and KEY not in out + err
    assert AuditEvent.objects.get(action="provider_key_set").actor_kind == "system"


def test_there_is_no_option_for_the_key_on_the_command_line(assigner, monkeypatch):
    status, _, _ = run(
        assigner.email, "--provider", "openai", "--key", KEY, stdin="", monkeypatch=monkeypatch
    )
    assert status != 0
    assert not ModelKey.objects.exists()


def test_the_newest_key_becomes_the_default_with_the_model_given(assigner, monkeypatch):
    run(assigner.email, "--provider", "openai", stdin="sk-openai-1111\n", monkeypatch=monkeypatch)
    status, _, _ = run(
        assigner.email,
        "--provider",
        "anthropic",
        "--model",
        "claude-picked",
        stdin="sk-anthropic-2222\n",
        monkeypatch=monkeypatch,
    )
    assert status == 0
    chosen = selectors.model_key_for_gather(user=assigner)
    assert (chosen.provider, chosen.model) == ("anthropic", "claude-picked")

    run(assigner.email, "--provider", "openai", stdin="sk-openai-3333\n", monkeypatch=monkeypatch)
    chosen = selectors.model_key_for_gather(user=assigner)
    assert (chosen.provider, chosen.key) == ("openai", "sk-openai-3333")


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (("nobody@example.com", "--provider", "openai"), KEY, "No user has the e-mail"),
        (("lead@example.com", "--provider", "openai"), "\n", "No key on standard input"),
        (("lead@example.com", "--provider", "mistral"), KEY, "Unknown provider 'mistral'"),
    ],
)
def test_clear_refusals_exit_1(assigner, monkeypatch, args, stdin, message):
    status, out, err = run(*args, stdin=stdin, monkeypatch=monkeypatch)

    assert status == 1
    assert message in err
    assert KEY not in out + err
    assert not ModelKey.objects.exists()


def test_call_command_takes_the_key_on_stdin(assigner):
    out = io.StringIO()
    call_command(
        "set_provider_key", assigner.email, provider="openai", stdin=io.StringIO(KEY), stdout=out
    )
    assert ModelKey.objects.get(user=assigner).key == KEY
    assert "…WXYZ" in out.getvalue()
