"""Dockerfile, compose.yaml and .dockerignore name files and settings that exist.

No Docker engine runs here. compose.yaml is checked two ways, neither of them
hand-written parsing: the file as written against the Compose Specification's
JSON schema (vendored: compose-spec.json, see its README) through jsonschema,
and its `${VAR}` interpolation, required variables included, by Compose itself:
`docker-compose config` (Debian's docker-compose, which .ci/run installs) reads
the file and the environment without a daemon. Where docker-compose is not
installed those tests are skipped, and fail under REQUIRE_SERVICES=1 (CI). The
Dockerfile's instructions are parsed and every name in them is checked against
the project.
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import dj_database_url
import jsonschema
import pytest
import yaml
from celery import Celery
from celery.app.utils import find_app
from django.conf import settings
from django.urls import resolve

from tests.harness.run_worker import supervisor_spec
from tests.harness.services import REQUIRE_SERVICES

ROOT = Path(settings.BASE_DIR)
HERE = Path(__file__).parent
PORT = 3000
# The vendored schema declares draft 2019-09 under a URI jsonschema does not
# recognise (".../draft/2019-09/schema#"), so the draft is named here.
SchemaValidator = jsonschema.Draft201909Validator

PRODUCTION_ENV = {
    "SECRET_KEY": "x" * 50,
    "ALLOWED_HOSTS": "commitments.example.com",
    "SITE_URL": "https://commitments.example.com",
    "POSTGRES_PASSWORD": "pg-secret",
    "POSTGRES_SERVICE_PASSWORD": "pg-service-secret",
    "FIELD_ENCRYPTION_KEYS": "mQ9kB0m0yK2cO0d4VbHkR3t1xqC8s5Yw7Zp2Lr6Ju4E=",
    "EMAIL_HOST": "smtp.example.com",
    "DEFAULT_FROM_EMAIL": "Commitments <noreply@example.com>",
}


# --- compose.yaml as written, and as Compose resolves it ---------------------------------


@pytest.fixture(scope="module")
def compose_file() -> dict:
    """compose.yaml as written (YAML anchors and merge keys resolved, `${VAR}` not)."""
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads((HERE / "compose-spec.json").read_text())


@pytest.fixture(scope="module")
def compose_config(tmp_path_factory):
    """Run `docker-compose config ARGS` on compose.yaml with exactly the given
    environment: no variable of this process and no .env file reaches it."""
    binary = shutil.which("docker-compose")
    if binary is None:
        if REQUIRE_SERVICES:
            pytest.fail("docker-compose is needed on PATH (.ci/run installs Debian's)")
        pytest.skip("docker-compose is not installed (apt-get install docker-compose)")
    no_env_file = tmp_path_factory.mktemp("compose") / "empty.env"
    no_env_file.touch()

    def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        command = [binary, "--env-file", str(no_env_file), "--project-directory", str(ROOT)]
        command += ["--file", str(ROOT / "compose.yaml"), "config", *args]
        return subprocess.run(
            command,
            env={"PATH": os.environ.get("PATH", os.defpath), **env},
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


@pytest.fixture(scope="module")
def compose(compose_config) -> dict:
    """compose.yaml as Compose resolves it for production's environment."""
    result = compose_config(PRODUCTION_ENV)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


# --- the Dockerfile and .dockerignore, read ------------------------------------------------


def parse_dockerfile(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    instructions: list[tuple[str, str]] = []
    current = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if current and stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        keyword, _, args = current.partition(" ")
        instructions.append((keyword.upper(), args.strip()))
        current = ""
    assert not current, "the Dockerfile ends in a continuation line"
    return instructions


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    return parse_dockerfile((ROOT / "Dockerfile").read_text())


def final_stage(instructions: list[tuple[str, str]]) -> list[tuple[str, str]]:
    starts = [i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM"]
    return instructions[starts[-1] :]


def exec_form(args: str) -> list[str]:
    return json.loads(args) if args.startswith("[") else shlex.split(args)


def dockerignore_patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def is_ignored(path: str, patterns: list[str]) -> bool:
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        glob = pattern.replace("**/", "*")
        if fnmatch.fnmatch(path, glob) or path.startswith(pattern + "/"):
            ignored = not negate
    return ignored


def healthcheck_url(command: list[str], port: str | None = None) -> str:
    """The URL a health check's `python -c` probe opens, with PORT set to
    `port` (or unset), found by running its code with urlopen recording."""
    assert command[-3:-1] == ["python", "-c"] or command[-2] == "-c", command
    import unittest.mock
    import urllib.request

    opened = []
    environ = {k: v for k, v in os.environ.items() if k != "PORT"}
    if port is not None:
        environ["PORT"] = port
    with (
        unittest.mock.patch.dict(os.environ, environ, clear=True),
        unittest.mock.patch.object(urllib.request, "urlopen", lambda url, **kw: opened.append(url)),
    ):
        exec(command[-1], {})
    assert len(opened) == 1, command
    return opened[0]


# --- compose.yaml -----------------------------------------------------------------------


def test_compose_file_is_valid_against_the_compose_specification(compose_file, schema):
    checker = jsonschema.FormatChecker()

    @checker.checks("duration")
    def is_duration(value: object) -> bool:
        return not isinstance(value, str) or bool(
            re.fullmatch(r"(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+", value)
        )

    SchemaValidator.check_schema(schema)
    errors = sorted(
        SchemaValidator(schema, format_checker=checker).iter_errors(compose_file),
        key=lambda e: list(e.absolute_path),
    )
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def test_the_schema_catches_a_broken_compose_file(compose_file, schema):
    # The check above can fail: a misspelt key and a bad condition are caught.
    broken = json.loads(json.dumps(compose_file))
    broken["services"]["web"]["helthcheck"] = broken["services"]["web"].pop("healthcheck")
    broken["services"]["worker"]["depends_on"]["migrate"]["condition"] = "service_ready"
    validator = SchemaValidator(schema)

    paths = {tuple(e.absolute_path) for e in validator.iter_errors(broken)}

    assert ("services", "web") in paths
    assert ("services", "worker", "depends_on") in paths


def test_compose_accepts_the_file_with_the_production_environment(compose_config):
    result = compose_config(PRODUCTION_ENV, "--quiet")

    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("how", ["unset", "empty"])
@pytest.mark.parametrize(
    "variable",
    [
        "SECRET_KEY",
        "ALLOWED_HOSTS",
        "SITE_URL",
        "POSTGRES_PASSWORD",
        "POSTGRES_SERVICE_PASSWORD",
        "FIELD_ENCRYPTION_KEYS",
        "EMAIL_HOST",
        "DEFAULT_FROM_EMAIL",
    ],
)
def test_compose_refuses_to_start_without_the_secrets(compose_config, variable, how):
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != variable}
    if how == "empty":
        env[variable] = ""

    result = compose_config(env, "--quiet")

    assert result.returncode != 0
    # Compose ends its error with the file's own message for that variable (before
    # it, it quotes the whole environment block, other variables' names included).
    message = result.stderr.strip().rpartition('": ')[2]
    assert re.match(rf"set {variable}\b", message), result.stderr


def test_compose_has_the_five_services_and_the_migrate_step(compose_file):
    services = compose_file["services"]

    assert set(services) == {
        "migrate",
        "web",
        "worker",
        "webhook-worker",
        "beat",
        "postgres",
        "redis",
    }
    assert services["postgres"]["image"] == "postgres:15"
    assert services["redis"]["image"] == "redis:7"
    for name in ("migrate", "web", "worker", "webhook-worker", "beat"):
        assert services[name]["build"] == "."
        assert (ROOT / services[name]["build"] / "Dockerfile").is_file()


@pytest.mark.parametrize("name", ["migrate", "web", "worker", "webhook-worker", "beat"])
def test_app_services_are_configured_by_environment(compose, name):
    env = compose["services"][name]["environment"]

    assert env["DEBUG"] == "0"
    assert env["SECRET_KEY"] == PRODUCTION_ENV["SECRET_KEY"]
    assert env["ALLOWED_HOSTS"] == PRODUCTION_ENV["ALLOWED_HOSTS"]
    assert env["SITE_URL"] == PRODUCTION_ENV["SITE_URL"]  # required: no localhost default
    database = dj_database_url.parse(env["DATABASE_URL"])
    postgres = compose["services"]["postgres"]["environment"]
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert database["HOST"] == "postgres"
    assert database["NAME"] == postgres["POSTGRES_DB"]
    assert re.fullmatch(r"redis://redis:6379/\d+", env["REDIS_URL"])


def _database_user(service: dict) -> tuple[str, str]:
    database = dj_database_url.parse(service["environment"]["DATABASE_URL"])
    return database["USER"], database["PASSWORD"]


@pytest.mark.parametrize("name", ["web", "worker", "webhook-worker", "beat"])
def test_the_service_connects_as_a_role_that_owns_nothing(compose, name):
    postgres = compose["services"]["postgres"]["environment"]

    user, password = _database_user(compose["services"][name])

    assert user == "commitments_service" != postgres["POSTGRES_USER"]
    assert password == PRODUCTION_ENV["POSTGRES_SERVICE_PASSWORD"]
    assert "POSTGRES_SERVICE_PASSWORD" not in compose["services"][name]["environment"]


def test_migrate_runs_as_the_owner_then_grants_the_service_role(compose):
    services = compose["services"]
    postgres = services["postgres"]["environment"]
    migrate = services["migrate"]
    command = " ".join(migrate["command"])
    service_user, _ = _database_user(services["web"])

    assert _database_user(migrate) == (postgres["POSTGRES_USER"], postgres["POSTGRES_PASSWORD"])
    assert command.index("manage.py migrate --noinput") < command.index("grant_service_role")
    assert "&&" in command  # no grants on a half-migrated schema, no start after a failure
    grant = shlex.split(command[command.index("python manage.py grant_service_role") :])
    assert grant[3] == service_user
    assert grant[grant.index("--password-from-env") + 1] == "POSTGRES_SERVICE_PASSWORD"
    assert (
        migrate["environment"]["POSTGRES_SERVICE_PASSWORD"]
        == (PRODUCTION_ENV["POSTGRES_SERVICE_PASSWORD"])
    )
    assert migrate["restart"] == "no"
    assert set(migrate["depends_on"]) == {"postgres"}
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    # Nothing serves before the migrate step has finished well.
    assert services["web"]["depends_on"]["migrate"]["condition"] == (
        "service_completed_successfully"
    )
    for name in ("worker", "webhook-worker", "beat"):
        assert services[name]["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        )


@pytest.mark.parametrize("name", ["worker", "webhook-worker", "beat"])
def test_workers_start_when_the_database_is_ready_not_when_web_is(compose, name):
    """Waiting for web's health check (30 s at least) left /readyz 503 for the
    first half minute of every start: no live consumer yet."""
    depends_on = compose["services"][name]["depends_on"]

    assert set(depends_on) == {"postgres", "redis", "migrate"}
    assert depends_on["postgres"]["condition"] == "service_healthy"
    assert depends_on["redis"]["condition"] == "service_healthy"
    assert depends_on["migrate"]["condition"] == "service_completed_successfully"


def test_unset_optional_variables_take_the_files_defaults(compose):
    env = compose["services"]["web"]["environment"]

    assert env["TRUST_X_FORWARDED_PROTO"] == "0"
    assert env["CSRF_TRUSTED_ORIGINS"] == ""
    assert env["WEB_CONCURRENCY"] == "3"


def test_compose_passes_only_variables_the_settings_read(compose_file):
    settings_source = (ROOT / "config" / "settings.py").read_text()
    # Read by gunicorn, not by the settings.
    outside_settings = {"WEB_CONCURRENCY"}

    for name in compose_file["services"]["web"]["environment"]:
        assert name in outside_settings or f'"{name}"' in settings_source, name


def test_every_depends_on_condition_can_be_met(compose_file):
    services = compose_file["services"]
    for name, service in services.items():
        for dependency, rule in (service.get("depends_on") or {}).items():
            assert dependency in services, (name, dependency)
            if rule["condition"] == "service_healthy":
                check = services[dependency].get("healthcheck", {})
                assert check.get("test") and not check.get("disable"), (name, dependency)
    for name in ("web", "worker", "webhook-worker", "beat"):
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"
    for name in ("web", "worker", "webhook-worker", "beat"):
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_postgres_keeps_its_data_in_a_named_volume(compose_file):
    volumes = compose_file["services"]["postgres"]["volumes"]
    data = [v for v in volumes if v.endswith(":/var/lib/postgresql/data")]

    assert len(data) == 1
    assert data[0].split(":")[0] in compose_file["volumes"]


def test_web_starts_through_the_start_script_after_the_migrate_step(compose_file, dockerfile):
    web = compose_file["services"]["web"]

    # The migrate service (the owner role) migrated; the service role cannot.
    assert web["command"] == ["scripts/start"]
    assert web["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert healthcheck_url(web["healthcheck"]["test"]).endswith(f":{PORT}/healthz")


def _published(compose: dict) -> list[str]:
    # Compose writes the short syntax back with the protocol: "127.0.0.1:3000:3000/tcp".
    return [p.removesuffix("/tcp") for p in compose["services"]["web"]["ports"]]


def test_web_is_published_on_the_hosts_loopback_only(compose, compose_config):
    assert _published(compose) == [f"127.0.0.1:{PORT}:{PORT}"]
    # WEB_PORT moves the host's side only.
    result = compose_config({**PRODUCTION_ENV, "WEB_PORT": "8080"})
    assert result.returncode == 0, result.stderr
    assert _published(yaml.safe_load(result.stdout)) == [f"127.0.0.1:8080:{PORT}"]


def test_beat_starts_the_project_app(compose_file):
    command = compose_file["services"]["beat"]["command"]

    assert command[:4] == ["celery", "-A", "config", "beat"]
    assert "--loglevel=INFO" in command
    assert isinstance(find_app(command[2]), Celery)


def _run_worker_spec(monkeypatch, command: list[str]) -> dict:
    """What `manage.py run_worker` with compose's arguments hands its
    supervisor (lib/supervise.py)."""
    assert command[:3] == ["python", "manage.py", "run_worker"], command
    return supervisor_spec(monkeypatch, *command[3:])


def test_the_workers_run_as_run_worker_starts_them(compose_file, monkeypatch, settings):
    """The services run the workers the benchmarks and the fault run measure:
    one each (beat is a service of its own, run once), a pool of threads,
    the outbox's and nudges' at lower CPU priority than web and the
    webhooks' worker, each under the supervisor that restarts it, and
    given the time of its warm shutdown before compose kills it."""
    settings.WORKER_OUTBOX_IDLE = True
    services = compose_file["services"]

    outbox = _run_worker_spec(monkeypatch, services["worker"]["command"])
    ((name, argv),) = outbox["children"]
    assert f"--queues={','.join(settings.CELERY_TASK_QUEUES)}" in argv
    assert "--hostname=celery@%h" in argv and "--pool=threads" in argv
    assert not any(arg.startswith("--beat") for arg in argv)
    assert outbox["idle"] == [name]
    assert outbox["nice"] == {name: settings.WORKER_OUTBOX_NICE}

    webhooks = _run_worker_spec(monkeypatch, services["webhook-worker"]["command"])
    ((name, argv),) = webhooks["children"]
    assert f"--queues={settings.WEBHOOK_QUEUE}" in argv
    assert "--hostname=webhooks@%h" in argv and "--pool=threads" in argv
    assert f"--concurrency={settings.CELERY_WORKER_CONCURRENCY}" in argv
    assert not any(arg.startswith("--beat") for arg in argv)
    assert (webhooks["idle"], webhooks["nice"]) == ([], {})
    # Compose waits for the warm shutdown the supervisor waits for.
    for name, spec in (("worker", outbox), ("webhook-worker", webhooks)):
        grace = services[name]["stop_grace_period"]
        assert re.fullmatch(r"\d+s", grace), grace
        assert int(grace[:-1]) > spec["stop_timeout"], (name, grace)
    # The health checks ping the workers by the names run_worker gives them.
    assert "celery@$$HOSTNAME" in " ".join(services["worker"]["healthcheck"]["test"])
    assert "webhooks@$$HOSTNAME" in " ".join(services["webhook-worker"]["healthcheck"]["test"])


def test_non_web_services_do_not_inherit_the_http_healthcheck(compose_file):
    # The image's HEALTHCHECK probes port 3000, where only web listens.
    services = compose_file["services"]
    assert services["beat"]["healthcheck"] == {"disable": True}
    assert services["migrate"]["healthcheck"] == {"disable": True}
    assert "celery -A config inspect ping" in " ".join(services["worker"]["healthcheck"]["test"])


# --- Dockerfile ---------------------------------------------------------------------------


def test_dockerfile_builds_on_python_311_slim(dockerfile):
    args = {
        a.split("=", 1)[0]: a.split("=", 1)[1] for k, a in dockerfile if k == "ARG" and "=" in a
    }
    bases = [
        re.sub(r"\$\{(\w+)\}", lambda m: args[m[1]], a.split()[0])
        for k, a in dockerfile
        if k == "FROM"
    ]

    assert bases and all(re.fullmatch(r"python:3\.11-slim(-\w+)?", base) for base in bases)


def test_every_copy_source_exists_and_is_not_ignored(dockerfile):
    patterns = dockerignore_patterns()
    copies = [a for k, a in dockerfile if k == "COPY" and not a.startswith("--from")]

    assert copies
    for args in copies:
        *sources, _destination = shlex.split(args)
        for source in sources:
            assert (ROOT / source).exists(), f"COPY {source}: no such file"
            assert not is_ignored(source, patterns), f"COPY {source}: excluded by .dockerignore"


def test_every_part_of_the_project_is_copied_into_the_image(dockerfile):
    copied = {
        shlex.split(a)[0] for k, a in dockerfile if k == "COPY" and not a.startswith("--from")
    }
    local_apps = {app for app in settings.INSTALLED_APPS if (ROOT / app).is_dir()}

    assert local_apps  # accounts, audit, commitments, integrations, gather
    assert local_apps | {"config", "templates", "static", "manage.py"} <= copied


def test_it_installs_the_runtime_lock_with_hashes(dockerfile):
    installs = [a for k, a in dockerfile if k == "RUN" and "pip install" in a]

    assert len(installs) == 1
    assert "--require-hashes" in installs[0]
    lock = re.search(r"-r\s+(\S+)", installs[0]).group(1)
    assert Path(lock).name == "requirements.lock"
    copied_lock = [a for k, a in dockerfile if k == "COPY" and "requirements" in a]
    assert copied_lock == [f"requirements.lock {lock}"]
    assert (ROOT / "requirements.lock").is_file()
    assert "requirements-dev" not in (ROOT / "Dockerfile").read_text()
    # The runtime lock holds no test tools.
    lock_text = (ROOT / "requirements.lock").read_text()
    for dev_tool in ("pytest", "ruff", "schemathesis"):
        assert f"\n{dev_tool}==" not in lock_text


def test_the_dependencies_are_installed_before_any_code_is_copied(dockerfile):
    """The build's cache: a change of the project's code rebuilds the layers
    from its first COPY on, never the dependencies (the lock's layer and the
    venv come first in both stages)."""
    index = {i: (k, a) for i, (k, a) in enumerate(dockerfile)}
    install = next(i for i, (k, a) in index.items() if k == "RUN" and "pip install" in a)
    lock = next(i for i, (k, a) in index.items() if k == "COPY" and "requirements.lock" in a)
    venv = next(i for i, (k, a) in index.items() if k == "COPY" and a.startswith("--from"))
    code = [
        i
        for i, (k, a) in index.items()
        if k == "COPY" and not a.startswith("--from") and "requirements" not in a
    ]

    assert lock < install < venv < min(code)


def test_no_installer_is_left_in_the_runtime_image(dockerfile):
    """pip and setuptools (about 23 MB in the venv, with their bytecode) have no
    use at run time: the build stage removes them from the venv before it is
    compiled and copied, the runtime stage takes only the venv from it, and
    removes the base image's pip as well."""
    (install,) = [a for k, a in dockerfile if k == "RUN" and "pip install" in a]
    steps = [step.strip() for step in install.split("&&")]
    uninstall = "/opt/venv/bin/python -m pip uninstall --yes pip setuptools wheel"
    assert uninstall in steps
    compile_step = next(i for i, step in enumerate(steps) if "compileall" in step)
    assert steps.index(uninstall) < compile_step
    runtime = final_stage(dockerfile)
    from_build = [a for k, a in runtime if k == "COPY" and a.startswith("--from")]
    assert from_build == ["--from=build /opt/venv /opt/venv"]
    runtime_runs = " ".join(a for k, a in runtime if k == "RUN")
    assert "pip uninstall --yes --root-user-action=ignore pip setuptools wheel" in runtime_runs
    # Nothing the service runs needs them.
    lock = (ROOT / "requirements.lock").read_text()
    for name in ("pip", "setuptools", "wheel"):
        assert not re.search(rf"^{name}==", lock, re.MULTILINE), name


def test_it_runs_as_a_non_root_user_in_production_mode(dockerfile):
    stage = final_stage(dockerfile)
    users = [a for k, a in stage if k == "USER"]
    env = " ".join(a for k, a in stage if k == "ENV")

    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert re.search(r"\bDEBUG=0\b", env)
    assert "SECRET_KEY" not in env
    assert not any(k == "ARG" and "SECRET" in a for k, a in dockerfile)


def test_static_files_are_collected_with_a_throwaway_key_for_that_step_only(dockerfile):
    stage = final_stage(dockerfile)
    runs = [a for k, a in stage if k == "RUN" and "collectstatic" in a]

    assert len(runs) == 1
    key = re.search(r"SECRET_KEY=(\S+)\s+python manage.py collectstatic --noinput", runs[0])
    assert key and len(key.group(1)) >= 32  # long enough for production settings
    # ... and it runs before the switch to the unprivileged user.
    keywords = [k for k, _ in stage]
    assert keywords.index("USER") > stage.index(("RUN", runs[0]))


def start_script_gunicorn() -> list[str]:
    """The gunicorn command scripts/start ends with (its `exec` line)."""
    text = (ROOT / "scripts" / "start").read_text().replace("\\\n", " ")
    (line,) = [line for line in text.splitlines() if line.strip().startswith("exec gunicorn")]
    return shlex.split(line)[1:]


def test_the_image_starts_through_the_start_script(dockerfile):
    stage = final_stage(dockerfile)
    command = exec_form([a for k, a in stage if k == "CMD"][-1])

    assert command == ["scripts/start"]
    script = ROOT / "scripts" / "start"
    assert os.access(script, os.X_OK)
    assert ("COPY", "scripts/start ./scripts/start") in stage


def gunicorn_settings():
    """The module scripts/start gives gunicorn with `--config python:...`."""
    command = start_script_gunicorn()
    source = command[command.index("--config") + 1]
    assert source.startswith("python:")
    return importlib.import_module(source.removeprefix("python:"))


def test_it_serves_config_wsgi_with_gunicorn_on_the_exposed_port(dockerfile, settings):
    # config.wsgi refuses to load with unsafe production settings, and tests
    # run with DEBUG off: give it safe ones.
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.REDIS_URL = "redis://redis.invalid:6379/0"
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    command = start_script_gunicorn()
    exposed = [a for k, a in final_stage(dockerfile) if k == "EXPOSE"]

    assert command[0] == "gunicorn"
    module, _, attribute = command[1].partition(":")
    assert callable(getattr(importlib.import_module(module), attribute))
    assert gunicorn_settings().bind == f"0.0.0.0:{PORT}"
    assert exposed == [str(PORT)]


def test_the_access_log_leaves_out_query_strings_and_referrers():
    conf = gunicorn_settings()

    assert conf.accesslog == "-"
    assert "%(U)s" in conf.access_log_format  # the path, without the query string
    for atom in ("%(r)s", "%(q)s", "%(f)s", "%({cookie}i)s", "%({authorization}i)s"):
        assert atom not in conf.access_log_format


def test_gunicorns_logs_pass_the_secret_redacting_filter(capsys):
    """As gunicorn sets its logging up from config.gunicorn: an access line
    with a password-reset key in its path comes out without the key."""
    import logging.config

    from gunicorn.config import Config
    from gunicorn.glogging import Logger

    conf = gunicorn_settings()
    cfg = Config()
    for name in ("accesslog", "access_log_format", "logconfig_dict"):
        cfg.set(name, getattr(conf, name))
    try:
        log = Logger(cfg)
        log.access_log.info('"GET /accounts/password/reset/key/1z-abc123secretkey/ HTTP/1.1" 200')
        log.error("cannot reach https://hooks.slack.com/services/T/B/very-secret")
    finally:
        logging.config.dictConfig(settings.LOGGING)
    out, err = capsys.readouterr()
    assert "/accounts/password/reset/key/[redacted]/" in out
    assert "abc123secretkey" not in out
    assert "hooks.slack.com/[redacted]" in err and "very-secret" not in err


@pytest.fixture
def start_script(tmp_path):
    """Run scripts/start with the given environment and a stand-in gunicorn on
    PATH that only says it was started (and with which arguments)."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    fake = fake_bin / "gunicorn"
    fake.write_text('#!/bin/sh\necho "gunicorn started: $*"\n')
    fake.chmod(0o755)
    python_bin = Path(sys.executable).parent

    def run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["sh", str(ROOT / "scripts" / "start")],
            env={
                "PATH": f"{fake_bin}:{python_bin}:{os.environ.get('PATH', os.defpath)}",
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "VAR_DIR": str(tmp_path / "var"),
                **env,
            },
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


@pytest.fixture(scope="module")
def compose_app_environment(compose) -> dict[str, str]:
    """The web service's environment as Compose resolves it for production."""
    return {k: str(v) for k, v in compose["services"]["web"]["environment"].items()}


@pytest.mark.processes
def test_the_start_script_runs_the_deployment_checks_then_gunicorn(
    start_script, compose_app_environment
):
    result = start_script(compose_app_environment)

    assert result.returncode == 0, result.stderr
    assert "gunicorn started: config.wsgi:application --config python:config.gunicorn" in (
        result.stdout
    )


@pytest.mark.processes
def test_the_start_script_stops_on_an_unsafe_setting_before_gunicorn(
    start_script, compose_app_environment
):
    unsafe = {
        **compose_app_environment,
        "EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend",
    }

    result = start_script(unsafe)

    assert result.returncode != 0
    assert "commitments.E001" in result.stderr
    assert "gunicorn started" not in result.stdout


@pytest.mark.django_db
def test_the_healthcheck_probes_a_routed_path_on_the_served_port(dockerfile, client, settings):
    check = [a for k, a in final_stage(dockerfile) if k == "HEALTHCHECK"]
    assert len(check) == 1
    command = exec_form(check[0].split(" CMD ", 1)[1])
    url = healthcheck_url(command)

    match = re.fullmatch(r"http://(127\.0\.0\.1|localhost):(\d+)(/\S*)", url)
    assert match and int(match.group(2)) == PORT
    # The port gunicorn binds, when PORT moves it.
    assert healthcheck_url(command, "8123") == url.replace(f":{PORT}/", ":8123/")
    path = match.group(3)
    assert resolve(path).url_name == "healthz"
    # As the container asks it: a loopback host, plain HTTP, production's HTTPS rule on.
    settings.HTTPS_ONLY = True
    settings.ALLOWED_HOSTS = ["commitments.example.com", "localhost", "127.0.0.1", "[::1]"]
    assert client.get(path, HTTP_HOST=f"127.0.0.1:{PORT}").status_code == 200


def test_dockerignore_keeps_local_state_out(dockerfile):
    patterns = dockerignore_patterns()

    for local in (".venv", ".git", "var", "staticfiles", ".env", "accounts/__pycache__"):
        assert is_ignored(local, patterns), local


def test_gunicorn_binds_port_and_opens_no_control_socket(monkeypatch):
    # gunicorn 25.1+ opens a control socket in $HOME/.gunicorn by default;
    # the image's user cannot write its home, so each start logged an error.
    monkeypatch.setenv("PORT", "8123")
    conf = importlib.reload(gunicorn_settings())
    try:
        assert conf.bind == "0.0.0.0:8123"
        assert conf.control_socket_disable is True
    finally:
        monkeypatch.delenv("PORT")
        importlib.reload(conf)


def test_the_image_compiles_bytecode_at_build_time_and_pulls_no_frontend(dockerfile):
    text = (ROOT / "Dockerfile").read_text()
    # `# syntax=` makes BuildKit pull a frontend image: an offline build fails.
    assert not re.search(r"(?im)^#\s*syntax\s*=", text)
    stage = final_stage(dockerfile)
    runs = " ".join(a for k, a in stage if k == "RUN")
    assert "compileall" in runs and "/app" in runs
    build_runs = " ".join(a for k, a in dockerfile if k == "RUN" and "pip install" in a)
    assert "compileall" in build_runs and "/opt/venv" in build_runs


def test_python_below_3_11_3_is_refused_where_the_lock_lacks_async_timeout():
    import tomllib

    from packaging.specifiers import SpecifierSet

    requires = SpecifierSet(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    )
    lock = (ROOT / "requirements.lock").read_text()
    assert "\nasync-timeout==" not in lock  # redis needs it below 3.11.3 only
    assert "3.11.2" not in requires and "3.11.3" in requires
    assert "(3, 11, 3)" in (ROOT / "scripts" / "_venv.sh").read_text()


def test_every_podman_build_the_project_documents_keeps_the_healthcheck(dockerfile):
    """podman's default OCI format drops HEALTHCHECK: every `podman build` or
    `buildah build` the project writes down says `--format docker`."""
    texts = {
        name: (ROOT / name).read_text()
        for name in ("Dockerfile", "docs/production.md", "README.md", "compose.yaml")
    }
    builds = [
        (name, line)
        for name, text in texts.items()
        for line in text.splitlines()
        if re.search(r"\b(podman|buildah) (build|bud)\b", line)
    ]

    assert builds, "the podman build is documented"
    for name, line in builds:
        assert "--format docker" in line, (name, line)
    assert any(instruction == "HEALTHCHECK" for instruction, _ in final_stage(dockerfile))
