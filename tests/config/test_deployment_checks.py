"""Unsafe production settings are caught before start: `manage.py check
--deploy --fail-level ERROR` fails on each, naming what to set, and the web
and worker processes refuse to start on the same errors. Each rule is checked
in-process, on the settings an environment makes (`settings_for`); that the
command, the web server and the worker apply them, in fresh processes with
exactly that environment."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.test import override_settings

from config.checks import production_problems
from tests.harness.settings import MODE_VARIABLES, REAL_FERNET_KEY, REAL_KEY, settings_for

SAFE_PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": REAL_KEY,
    "ALLOWED_HOSTS": "commitments.example.com",
    "SITE_URL": "https://commitments.example.com",
    "FIELD_ENCRYPTION_KEYS": REAL_FERNET_KEY,
    "REDIS_URL": "redis://redis.invalid:6379/0",
    "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
    "EMAIL_HOST": "smtp.example.com",
}
EXTRA_VARIABLES = ("EMAIL_BACKEND", "EMAIL_HOST", "OUTBOUND_ALLOW_LOOPBACK", "LOG_LEVEL")


@pytest.fixture
def run(tmp_path):
    def run(args: list[str], **overrides: str | None) -> subprocess.CompletedProcess[str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in MODE_VARIABLES and k not in EXTRA_VARIABLES
        }
        env.update(SAFE_PRODUCTION)
        env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "VAR_DIR": str(tmp_path)})
        for name, value in overrides.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return subprocess.run(
            [sys.executable, *args],
            cwd=settings.BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


def check_deploy(run, **overrides: str | None) -> subprocess.CompletedProcess[str]:
    return run(["manage.py", "check", "--deploy", "--fail-level", "ERROR"], **overrides)


CHECKED = (
    "DEBUG",
    "EMAIL_BACKEND",
    "REDIS_URL",
    "FIELD_ENCRYPTION_KEYS",
    "OUTBOUND_ALLOW_LOOPBACK",
    "LOCAL_SITE",
    "SITE_URL",
)


def problems_for(tmp_path, **overrides: str | None) -> list:
    """The deployment checks' errors on the settings this environment makes."""
    env = {name: None for name in EXTRA_VARIABLES} | SAFE_PRODUCTION | overrides
    values = settings_for(tmp_path, **env)
    with override_settings(**{name: values[name] for name in CHECKED}):
        return production_problems()


def test_a_correct_production_environment_has_no_problem(tmp_path):
    assert problems_for(tmp_path) == []


@pytest.mark.processes
def test_a_correct_production_environment_passes(run):
    result = check_deploy(run)
    assert result.returncode == 0, result.stderr
    assert "commitments.E" not in result.stderr + result.stdout
    # Nothing printed at every start that docs/production.md does not explain:
    # Django's security.W008 and W021 are silenced there, with their reasons.
    assert "WARNINGS" not in result.stderr + result.stdout, result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.mark.parametrize(
    ("overrides", "check_id", "says"),
    [
        (
            {"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"},
            "commitments.E001",
            "Set EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend and EMAIL_HOST",
        ),
        (
            {"EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend"},
            "commitments.E001",
            "Set EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend and EMAIL_HOST",
        ),
        ({"EMAIL_BACKEND": None}, "commitments.E001", "Set EMAIL_BACKEND="),  # the default
        ({"REDIS_URL": None}, "commitments.E002", "Set REDIS_URL"),
        ({"FIELD_ENCRYPTION_KEYS": None}, "commitments.E003", "Set FIELD_ENCRYPTION_KEYS"),
        ({"FIELD_ENCRYPTION_KEYS": ""}, "commitments.E003", "urlsafe_b64encode(os.urandom(32))"),
        ({"OUTBOUND_ALLOW_LOOPBACK": "1"}, "commitments.E004", "Set OUTBOUND_ALLOW_LOOPBACK=0"),
        ({"SITE_URL": None}, "commitments.E005", "Set SITE_URL to the address people open"),
        ({"SITE_URL": "http://localhost:3000"}, "commitments.E005", "would point at this machine"),
        ({"SITE_URL": "http://127.0.0.1:8000/"}, "commitments.E005", "Set SITE_URL"),
    ],
    ids=[
        "console-mail",
        "locmem-mail",
        "default-mail",
        "no-redis",
        "no-encryption-key",
        "empty-encryption-key",
        "outbound-loopback",
        "no-site-url",
        "localhost-site-url",
        "loopback-site-url",
    ],
)
def test_each_unsafe_production_setting_is_an_error_naming_what_to_set(
    tmp_path, overrides, check_id, says
):
    (problem,) = problems_for(tmp_path, **overrides)

    assert problem.is_serious()
    assert problem.id == check_id
    assert says in f"{problem.msg} {problem.hint}"


def test_a_site_on_this_machine_needs_only_its_encryption_key(tmp_path):
    """The quick start (./scripts/serve): production mode, reached as localhost
    only; printed mail, the folder broker and loopback webhooks are its point."""
    local = {"ALLOWED_HOSTS": None, "SITE_URL": "http://localhost:3000"}
    unsafe_elsewhere = {"EMAIL_BACKEND": None, "REDIS_URL": None, "OUTBOUND_ALLOW_LOOPBACK": "1"}

    assert problems_for(tmp_path, **local, **unsafe_elsewhere) == []
    (problem,) = problems_for(tmp_path, **local, FIELD_ENCRYPTION_KEYS=None)
    assert problem.id == "commitments.E003"
    # One public name in ALLOWED_HOSTS and it is a deployment like any other.
    public = {**local, "ALLOWED_HOSTS": "localhost,commitments.example.com"}
    found = problems_for(tmp_path, **public, **unsafe_elsewhere)
    assert [p.id for p in found] == [f"commitments.E00{n}" for n in (1, 2, 4, 5)]


def test_a_check_the_settings_silence_is_not_reported_and_the_others_still_are(tmp_path):
    """As Django's own checks: the benchmark's settings silence E004 (outbound
    requests to its loopback receivers) without replacing the check."""
    silenced = [*settings.SILENCED_SYSTEM_CHECKS, "commitments.E004"]
    with override_settings(SILENCED_SYSTEM_CHECKS=silenced):
        assert problems_for(tmp_path, OUTBOUND_ALLOW_LOOPBACK="1") == []
        (problem,) = problems_for(tmp_path, OUTBOUND_ALLOW_LOOPBACK="1", REDIS_URL=None)
    assert problem.id == "commitments.E002"


def test_the_same_settings_in_development_pass(tmp_path):
    problems = problems_for(
        tmp_path,
        DEBUG="1",
        ALLOWED_HOSTS=None,
        SITE_URL=None,
        EMAIL_BACKEND=None,
        REDIS_URL=None,
        FIELD_ENCRYPTION_KEYS=None,
        OUTBOUND_ALLOW_LOOPBACK="1",
    )
    assert problems == []


@pytest.mark.processes
def test_every_problem_is_reported_at_once_by_check_deploy(run):
    result = check_deploy(run, EMAIL_BACKEND=None, REDIS_URL=None, OUTBOUND_ALLOW_LOOPBACK="1")
    assert result.returncode != 0
    for check_id in ("commitments.E001", "commitments.E002", "commitments.E004"):
        assert check_id in result.stderr


@pytest.mark.processes
def test_the_web_server_refuses_to_start_without_a_site_url_others_can_open(run):
    """A forgotten SITE_URL would send every nudge's links to localhost."""
    for site_url in (None, "http://localhost:3000"):
        result = run(["-c", "import config.wsgi"], SITE_URL=site_url)

        assert result.returncode != 0
        assert "commitments.E005" in result.stderr
        assert "Set SITE_URL to the address people open" in result.stderr
    assert "commitments.E005" in check_deploy(run, SITE_URL=None).stderr


@pytest.mark.processes
def test_the_web_server_refuses_to_start_without_an_encryption_key(run):
    """However it is started (not only through scripts/start): loading the
    WSGI application fails, loudly, with the check's message."""
    result = run(["-c", "import config.wsgi"], FIELD_ENCRYPTION_KEYS=None)

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "commitments.E003" in result.stderr
    assert "Set FIELD_ENCRYPTION_KEYS" in result.stderr


@pytest.mark.processes
def test_the_benchmark_settings_pass_check_deploy_and_start_with_loopback_allowed(run):
    """benchmarks/settings.py: production's settings, loopback allowed, E004
    silenced; the web server starts on them and the check passes."""
    benchmark = {"DJANGO_SETTINGS_MODULE": "benchmarks.settings"}
    started = run(
        [
            "-c",
            "import config.wsgi; from django.conf import settings as s; "
            "print(s.OUTBOUND_ALLOW_LOOPBACK)",
        ],
        **benchmark,
    )
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == "True"
    assert check_deploy(run, **benchmark).returncode == 0


@pytest.mark.processes
def test_the_web_server_starts_with_a_correct_production_environment(run):
    result = run(["-c", "import config.wsgi; print('loaded')"])

    assert result.returncode == 0, result.stderr
    assert "loaded" in result.stdout


@pytest.mark.processes
def test_a_worker_refuses_to_start_on_an_unsafe_setting(run):
    result = run(
        ["-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=INFO"],
        REDIS_URL=None,
    )

    assert result.returncode != 0
    assert "commitments.E002" in result.stderr + result.stdout
