"""manage.py set_model_key EMAIL --provider openai|anthropic [--model M]:
the key comes from standard input, never the command line; the newest
stored key becomes the user's default; clear refusals exit 1. Its name
before the glossary's "model key", set_provider_key, does the same with the
same output (operators' scripts call it): every test runs both."""

from __future__ import annotations

import io

import pytest
from django.core.management import base, call_command

from audit.models import AuditEvent
from gather import selectors
from gather.management.commands import set_model_key, set_provider_key
from gather.models import ModelKey

pytestmark = pytest.mark.django_db

KEY = "sk-ant-from-stdin-0123456789-WXYZ"


COMMANDS = {"set_model_key": set_model_key, "set_provider_key": set_provider_key}


@pytest.fixture(autouse=True)
def _keep_the_test_connection(monkeypatch):
    # run_from_argv closes every database connection when it ends.
    monkeypatch.setattr(base.connections, "close_all", lambda: None)


def run_command(command: str, *args: str, stdin: str, monkeypatch) -> tuple[int, str, str]:
    """As manage.py runs it: status, stdout, stderr."""
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    out, err = io.StringIO(), io.StringIO()
    runner = COMMANDS[command].Command(stdout=out, stderr=err)
    try:
        runner.run_from_argv(["manage.py", command, *args])
    except SystemExit as exit_:
        assert isinstance(exit_.code, int)  # run_from_argv exits with a status
        return exit_.code, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


@pytest.fixture(params=list(COMMANDS))
def name(request) -> str:
    """The command's name: each test runs with the new one and the alias."""
    return request.param


@pytest.fixture
def run(name, monkeypatch):
    def run(*args: str, stdin: str) -> tuple[int, str, str]:
        return run_command(name, *args, stdin=stdin, monkeypatch=monkeypatch)

    return run


def test_it_reads_the_key_from_stdin_and_confirms_with_the_last_four(assigner, run):
    status, out, err = run("LEAD@example.com", "--provider", "anthropic", stdin=f"{KEY}\n")

    assert status == 0
    stored = ModelKey.objects.get(user=assigner)
    assert (stored.provider, stored.key, stored.is_default) == ("anthropic", KEY, True)
    assert "…WXYZ" in out and KEY not in out + err
    assert AuditEvent.objects.get(action="model_key_set").actor_kind == "system"


def test_there_is_no_option_for_the_key_on_the_command_line(assigner, run):
    status, _, _ = run(assigner.email, "--provider", "openai", "--key", KEY, stdin="")
    assert status != 0
    assert not ModelKey.objects.exists()


def test_the_newest_key_becomes_the_default_with_the_model_given(assigner, run):
    run(assigner.email, "--provider", "openai", stdin="sk-openai-1111\n")
    status, _, _ = run(
        assigner.email,
        "--provider",
        "anthropic",
        "--model",
        "claude-picked",
        stdin="sk-anthropic-2222\n",
    )
    assert status == 0
    chosen = selectors.model_key_for_gather(user=assigner)
    assert (chosen.provider, chosen.model) == ("anthropic", "claude-picked")

    run(assigner.email, "--provider", "openai", stdin="sk-openai-3333\n")
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
def test_clear_refusals_exit_1(assigner, run, args, stdin, message):
    status, out, err = run(*args, stdin=stdin)

    assert status == 1
    assert message in err
    assert KEY not in out + err
    assert not ModelKey.objects.exists()


def test_call_command_takes_the_key_on_stdin(assigner, name):
    out = io.StringIO()
    call_command(name, assigner.email, provider="openai", stdin=io.StringIO(KEY), stdout=out)
    assert ModelKey.objects.get(user=assigner).key == KEY
    assert "…WXYZ" in out.getvalue()


@pytest.mark.parametrize(
    "args",
    [
        ("lead@example.com", "--provider", "anthropic", "--model", "claude-picked"),
        ("nobody@example.com", "--provider", "openai"),
        ("lead@example.com", "--provider", "mistral"),
    ],
)
def test_the_alias_answers_exactly_as_set_model_key(assigner, monkeypatch, args):
    answers = []
    for command in COMMANDS:
        ModelKey.objects.all().delete()
        answers.append(run_command(command, *args, stdin=f"{KEY}\n", monkeypatch=monkeypatch))
    assert answers[0] == answers[1]
    assert answers[0][1] or answers[0][2]  # it did answer
