"""The production image, built from this checkout and run as compose.yaml runs it.

`podman build --isolation chroot --format docker` builds the Dockerfile (on the
stand-in base `localhost/python:3.11-slim-bookworm` that
`../shared/tools/python-base-image` makes, where no registry is reachable;
IMAGE_TEST_PYTHON_IMAGE names another). Each service of compose.yaml then gets
a container of its own (`buildah from`) with compose's environment for it
(`buildah config --env`) and runs compose's command in it as the image's `app`
user (`buildah run --isolation chroot --user app`, on the host's network:
`podman run` cannot set rlimits on these machines): the migrate step (the
migrations as the owner of the tables, then the service role and its grants),
web, the worker, the webhook worker and beat. What differs from compose, and
only that: PostgreSQL and Redis are the machine's (DATABASE_URL, REDIS_URL: a
database and a service role of this test's own, created and dropped here),
mail goes to a local SMTP sink (tests/harness/smtp.py), and web listens on a
free port (PORT) since the host's network is shared.

Then: /healthz and /readyz, a page and its stylesheet, an inbox call with a
token the operator command mints and its nudge delivered over SMTP, and the
image's own HEALTHCHECK command, read from the image and executed.

Skipped with the reason where podman or buildah is missing, where this is not
root, or without PostgreSQL, Redis or the base image; failed instead under
REQUIRE_SERVICES=1 (CI: .ci/run installs podman, buildah and mmdebstrap and
makes the stand-in base first). Every container made here is removed and
every process started here killed, also when a step fails.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import signal
import smtplib
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

import pytest
import yaml
from django.urls import reverse

from tests.harness.services import REQUIRE_SERVICES, Process, free_port, purge_queue, wait_until
from tests.harness.smtp import SmtpSink

ROOT = Path(__file__).resolve().parents[2]
PYTHON_IMAGE = os.environ.get("IMAGE_TEST_PYTHON_IMAGE", "localhost/python:3.11-slim-bookworm")
TAG = "localhost/commitments:test"
# The compose services that run the image, in the order compose starts them.
SERVICES = ("migrate", "web", "worker", "webhook-worker", "beat")
PASSWORD = "a long enough operator password 7"
ASSIGNER, ASSIGNEE = "lead@example.com", "knight@example.com"
SITE_URL = "https://commitments.example.com"
# The image is lean: no installer at run time (docs/production.md gives its size).
MAX_IMAGE_BYTES = 450 * 1000 * 1000


def unavailable(reason: str) -> NoReturn:
    if REQUIRE_SERVICES:
        pytest.fail(reason)
    pytest.skip(reason)


def run(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(
            f"{' '.join(args[:4])} ... exited {result.returncode}:\n"
            f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
    return result


# --- compose.yaml's environment and commands -------------------------------------------

INTERPOLATION = re.compile(r"\$\$|\$\{(\w+)(?:(:?[-?])([^}]*))?\}")


def interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's `${VAR}`, `${VAR:-default}`, `${VAR:?message}` and `$$`. (That
    Compose itself reads the file so is checked by test_deployment_files.py.)"""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, operator, argument = match.groups()
        value = variables.get(name)
        if operator in (":?", "?") and not value:
            raise AssertionError(f"compose.yaml requires {name}: {argument}")
        if operator in (":-", "-") and not value:
            return argument
        return value or ""

    return INTERPOLATION.sub(substitute, value)


def compose_service(name: str, variables: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The environment and the command compose.yaml gives service `name`."""
    service = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"][name]
    environment = {
        key: interpolate(str(value), variables) for key, value in service["environment"].items()
    }
    return environment, [interpolate(part, variables) for part in service["command"]]


# --- the machine's PostgreSQL, a database and a service role of this test's own ----------


@dataclass
class Database:
    owner_url: str  # the owner of the tables: who migrates (compose's POSTGRES_USER)
    service_url: str  # the role web and workers connect as
    service_role: str
    name: str


@contextlib.contextmanager
def own_database() -> Iterator[Database]:
    import psycopg
    from psycopg import sql

    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        unavailable("the image test needs PostgreSQL: set DATABASE_URL")
    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/') or 'commitments'}_image"
    role = f"{name}_service"
    password = base64.urlsafe_b64encode(os.urandom(18)).decode()
    maintenance = urlunsplit(parts._replace(path="/postgres"))

    def drop(conn: psycopg.Connection[Any]) -> None:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))

    with psycopg.connect(maintenance, autocommit=True) as conn:
        drop(conn)  # what a run that was killed left
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    host = parts.hostname or "127.0.0.1"
    service = f"postgres://{role}:{password}@{host}:{parts.port or 5432}/{name}"
    try:
        yield Database(urlunsplit(parts._replace(path=f"/{name}")), service, role, name)
    finally:
        with psycopg.connect(maintenance, autocommit=True) as conn:
            drop(conn)


# --- containers: one per service, as compose makes them ------------------------------------


class Container:
    """`buildah from IMAGE` with compose's environment for one service; its
    commands run as the image's `app` user on the host's network."""

    def __init__(self, name: str, image: str, environment: dict[str, str], logs: Path) -> None:
        self.name, self.logs = name, logs
        self.processes: list[Process] = []
        run("buildah", "rm", name, check=False)  # left by a run that was killed
        self.id = run("buildah", "from", "--name", name, image).stdout.strip().splitlines()[-1]
        run("buildah", "config", *[f"--env={k}={v}" for k, v in environment.items()], self.id)

    def command(self, *args: str, env: dict[str, str] | None = None) -> list[str]:
        extra = [f"--env={k}={v}" for k, v in (env or {}).items()]
        return [
            "buildah",
            "run",
            "--isolation",
            "chroot",
            "--user",
            "app",
            *extra,
            self.id,
            "--",
            *args,
        ]

    def run(
        self, *args: str, timeout: float = 300, check: bool = True, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return run(*self.command(*args, env=env), timeout=timeout, check=check)

    def start(self, args: list[str]) -> Process:
        process = Process(
            self.command(*args), dict(os.environ), self.logs / f"{self.name}.log"
        ).start()
        self.processes.append(process)
        return process

    def remove(self) -> None:
        """Every process started in the container stopped (buildah's chroot keeps
        them in the process group of `buildah run`), then the container removed."""
        for process in self.processes:
            process.kill(signal.SIGTERM)  # the group; SIGKILL after 10 s
            if process.proc is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.proc.pid, signal.SIGKILL)  # what outlived buildah
        run("buildah", "rm", self.id, check=False)


# --- the fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tools() -> None:
    missing = [tool for tool in ("podman", "buildah") if shutil.which(tool) is None]
    if missing:
        unavailable(
            f"{' and '.join(missing)} not installed: the image test builds and runs the "
            "image with them (apt-get install podman buildah; .ci/run does)"
        )
    if os.geteuid() != 0:
        unavailable("the image test builds and runs containers as root (--isolation chroot)")
    if (
        PYTHON_IMAGE.startswith("localhost/")
        and run("podman", "image", "exists", PYTHON_IMAGE, check=False).returncode
    ):
        unavailable(
            f"no base image {PYTHON_IMAGE}: make it with ../shared/tools/python-base-image "
            "(.ci/run does), or name a reachable one in IMAGE_TEST_PYTHON_IMAGE"
        )


@pytest.fixture(scope="module")
def image(tools, tmp_path_factory) -> dict[str, Any]:
    """The image built from this checkout (cached layers reused), inspected."""
    log = tmp_path_factory.mktemp("image") / "build.log"
    started = time.monotonic()
    with log.open("w") as handle:
        built = subprocess.run(
            ["podman", "build", "--isolation", "chroot", "--format", "docker",
             "--build-arg", f"PYTHON_IMAGE={PYTHON_IMAGE}", "--tag", TAG, str(ROOT)],
            stdout=handle, stderr=subprocess.STDOUT, timeout=1800,
        )  # fmt: skip
    assert built.returncode == 0, f"podman build failed:\n{log.read_text()[-5000:]}"
    (inspected,) = json.loads(run("podman", "image", "inspect", TAG).stdout)
    print(
        f"image {TAG} built in {time.monotonic() - started:.0f} s, {inspected['Size'] / 1e6:.0f} MB"
    )
    return inspected


@pytest.fixture(scope="module")
def stack(image, tmp_path_factory) -> Iterator[dict[str, Any]]:
    """compose.yaml's services from the image: migrate run to its end, then web,
    the worker, the webhook worker and beat started, web serving."""
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        unavailable("the image test needs Redis: set REDIS_URL")
    logs = tmp_path_factory.mktemp("containers")
    port = free_port()
    containers: list[Container] = []
    with own_database() as database, SmtpSink() as sink:
        variables = {
            "SECRET_KEY": base64.urlsafe_b64encode(os.urandom(40)).decode(),
            "ALLOWED_HOSTS": "commitments.example.com",
            "SITE_URL": SITE_URL,
            "FIELD_ENCRYPTION_KEYS": base64.urlsafe_b64encode(os.urandom(32)).decode(),
            "POSTGRES_PASSWORD": "owner-password-unused-on-trust",
            "POSTGRES_SERVICE_PASSWORD": database.service_url.split(":")[2].split("@")[0],
            "EMAIL_HOST": "127.0.0.1",
            "EMAIL_PORT": str(sink.port),
            "EMAIL_USE_TLS": "0",
            "DEFAULT_FROM_EMAIL": "Commitments <noreply@example.com>",
            "WEB_CONCURRENCY": "2",
        }
        # The machine's PostgreSQL and Redis instead of compose's, and a free port.
        here = {"DATABASE_URL": database.service_url, "REDIS_URL": redis_url, "PORT": str(port)}
        purge_queue(redis_url)
        try:
            for name in SERVICES:
                environment, command = compose_service(name, variables)
                environment |= here
                if name == "migrate":
                    environment["DATABASE_URL"] = database.owner_url
                    assert "commitments_service" in command[-1]
                    command[-1] = command[-1].replace("commitments_service", database.service_role)
                container = Container(f"{database.name}-{name}", TAG, environment, logs)
                containers.append(container)
                if name == "migrate":
                    migrated = container.run(*command, timeout=600)
                    print(migrated.stdout[-2000:])
                else:
                    container.start(command)
            process = containers[SERVICES.index("web")].processes[0]

            def serving() -> bool:
                if process.proc is not None and process.proc.poll() is not None:
                    raise AssertionError(f"web exited:\n{process.output()[-4000:]}")
                with contextlib.suppress(OSError):
                    return get(port, "/healthz")[0] == 200
                return False

            wait_until(serving, timeout=180, what="web serving /healthz")
            yield {
                "port": port,
                "sink": sink,
                "database": database,
                "containers": dict(zip(SERVICES, containers, strict=True)),
                "logs": logs,
            }
        finally:
            for container in reversed(containers):
                container.remove()
            for log in sorted(logs.iterdir()):
                print(
                    f"--- last lines of {log.name} ---\n{log.read_text(errors='replace')[-3000:]}"
                )


def get(
    port: int, path: str, headers: dict[str, str] | None = None, data: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=data, headers=headers or {}
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


# --- the tests ---------------------------------------------------------------------------


processes = pytest.mark.processes


def test_the_smtp_sink_keeps_what_smtplib_sends():
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "a@example.com", "b@example.com", "Hi"
    message.set_content(".a line starting with a dot\nand another")
    with SmtpSink() as sink, smtplib.SMTP("127.0.0.1", sink.port, timeout=10) as client:
        client.send_message(message)
        (delivered,) = sink.wait_for(1, timeout=10)

    assert (delivered.sender, delivered.recipients) == ("a@example.com", ["b@example.com"])
    assert delivered.message["Subject"] == "Hi"
    assert delivered.message.get_content().startswith(".a line starting with a dot\n")


@processes
def test_the_image_keeps_its_healthcheck_and_carries_no_installer(image):
    """Built in Docker's format, HEALTHCHECK survives (podman's OCI default drops
    it); pip and setuptools are gone from the runtime image, which stays lean."""
    healthcheck = image["Healthcheck"]
    assert healthcheck and healthcheck["Test"][0] in ("CMD", "CMD-SHELL"), healthcheck
    assert image["Config"]["User"] == "app"
    assert image["Size"] < MAX_IMAGE_BYTES, f"{image['Size'] / 1e6:.0f} MB"
    container = Container("commitments-image-test-lean", TAG, {}, Path("/tmp"))
    try:
        found = container.run(
            "python", "-c",
            "import importlib.util as u, shutil; "
            "print([m for m in ('pip', 'setuptools', 'wheel') if u.find_spec(m)], "
            "[b for b in ('pip', 'pip3', 'curl') if shutil.which(b)])",
        )  # fmt: skip
    finally:
        container.remove()
    assert found.stdout.strip() == "[] []"


@processes
def test_migrate_gives_the_service_role_only_append_and_read_on_the_audit_trail(stack):
    import psycopg

    database = stack["database"]
    with psycopg.connect(database.owner_url) as conn:
        privileges = conn.execute(
            "SELECT has_table_privilege(%(role)s, 'audit_auditevent', 'INSERT'),"
            " has_table_privilege(%(role)s, 'audit_auditevent', 'UPDATE'),"
            " has_table_privilege(%(role)s, 'audit_auditevent', 'DELETE'),"
            " has_table_privilege(%(role)s, 'commitments_commitment', 'UPDATE'),"
            " (SELECT count(*) FROM django_migrations)",
            {"role": database.service_role},
        ).fetchone()

    assert privileges is not None
    assert privileges[:4] == (True, False, False, True)
    assert privileges[4] > 0


@processes
def test_web_answers_healthz_and_readyz_with_every_queue_consumed(stack):
    port = stack["port"]

    status, _, body = get(port, "/healthz")
    assert (status, json.loads(body)) == (200, {"status": "ok"})

    # The workers heartbeat every few seconds once ready: ready as soon as both have.
    def ready() -> dict[str, Any] | None:
        status, _, body = get(port, "/readyz")
        return json.loads(body) if status == 200 else None

    readiness = wait_until(ready, timeout=120, what="/readyz 200")
    assert readiness["status"] == "ready"
    assert set(readiness["checks"]) >= {"database", "redis", "queues"}, readiness
    # And as the docs have an operator ask, from inside the container (no curl).
    inside = stack["containers"]["web"].run("scripts/request", "/readyz")
    assert inside.stdout.startswith("200 ")


@processes
def test_a_page_and_its_stylesheet_are_served_from_the_image(stack):
    port = stack["port"]

    status, headers, body = get(port, reverse("account_login"))
    assert status == 200, body[:500]
    assert headers["Content-Type"].startswith("text/html")
    stylesheets = re.findall(rb'<link[^>]+rel="stylesheet"[^>]+href="([^"]+)"', body)
    stylesheets += re.findall(rb'<link[^>]+href="([^"]+)"[^>]+rel="stylesheet"', body)
    assert stylesheets, body[:2000]

    status, headers, css = get(port, stylesheets[0].decode())
    assert status == 200
    assert headers["Content-Type"].startswith("text/css")
    assert len(css) > 100
    # Collected at build time with hashed names, so cached for good.
    assert "immutable" in headers.get("Cache-Control", ""), headers


@processes
def test_an_inbox_call_is_a_nudge_delivered_over_smtp(stack):
    web = stack["containers"]["web"]
    for email in (ASSIGNER, ASSIGNEE):
        web.run("python", "manage.py", "create_user", email, "--password", PASSWORD)
    token = web.run("python", "manage.py", "mint_token", ASSIGNER, "--name", "jira")
    token = token.stdout.strip().splitlines()[-1]
    payload = {
        "assignerEmail": ASSIGNER,
        "assigneeEmail": ASSIGNEE,
        "description": "Renew the TLS certificate of the billing host",
        "deadline": None,
        "externalSystem": "jira",
        "externalId": "OPS-42",
    }

    status, _, body = get(
        stack["port"],
        "/api/v1/inbox",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        data=json.dumps(payload).encode(),
    )
    sent = time.monotonic()

    assert status == 201, body
    commitment = json.loads(body)["id"]
    (mail,) = stack["sink"].wait_for(1, timeout=60)
    print(f"nudge delivered {mail.received_at - sent:.1f} s after the 201")
    assert mail.recipients == [ASSIGNEE]
    assert mail.sender == "noreply@example.com"
    text = mail.message.get_body(("plain",)).get_content()
    assert payload["description"] in text
    assert f"{SITE_URL}/" in text and "127.0.0.1" not in text and "localhost" not in text
    import psycopg

    with psycopg.connect(stack["database"].owner_url) as conn:
        row = conn.execute(
            "SELECT status FROM commitments_commitment WHERE id = %s", (commitment,)
        ).fetchone()
        audited = conn.execute(
            "SELECT actor_kind FROM audit_auditevent WHERE subject_id = %s", (commitment,)
        ).fetchall()
    assert row == ("Pending_Handshake",)
    assert ("api_token",) in audited


@processes
@pytest.mark.parametrize("service", SERVICES[1:])
def test_every_service_runs_as_the_images_app_user(stack, service):
    """Every process of the service (gunicorn's master and workers, Celery's
    pool) as uid 10001, the image's `app`; only buildah's own are root."""
    (process,) = stack["containers"][service].processes
    assert process.proc is not None and process.proc.poll() is None, process.output()[-3000:]
    users: list[tuple[str, int]] = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError):
            if proc.name.isdigit() and os.getpgid(int(proc.name)) == process.proc.pid:
                status = dict(
                    line.split(":", 1) for line in (proc / "status").read_text().splitlines()
                )
                users.append((status["Name"].strip(), int(status["Uid"].split()[0])))
    served = [(name, uid) for name, uid in users if "buildah" not in name]

    assert served, users
    assert {uid for _, uid in served} == {10001}, users


@processes
def test_beat_runs_as_the_app_user_and_its_sweep_reaches_the_worker(stack):
    """Beat keeps its schedule in the writable var/ folder (the app user cannot
    write /app) and sends the outbox sweep, which the worker runs (every
    OUTBOX_SWEEP_INTERVAL, 30 s: the first one comes that long after the start)."""
    beat, worker = stack["containers"]["beat"], stack["containers"]["worker"]

    wait_until(
        lambda: (
            "relay.tasks.sweep" in beat.processes[0].output()
            and re.search(
                r"Task relay\.tasks\.sweep\[[^]]+\] succeeded", worker.processes[0].output()
            )
        ),
        timeout=90,
        what="beat's sweep run by the worker",
    )
    # shelve's files (dbm's: one or several, as the base's Python has them).
    owners = beat.run("sh", "-c", "stat -c %U /app/var/celerybeat-schedule*").stdout.split()
    assert owners and set(owners) == {"app"}
    assert beat.processes[0].proc is not None and beat.processes[0].proc.poll() is None


@processes
def test_the_images_healthcheck_passes_on_web_and_fails_where_nothing_serves(stack, image):
    test = image["Healthcheck"]["Test"]
    command = test[1:] if test[0] == "CMD" else ["/bin/sh", "-c", test[1]]
    web = stack["containers"]["web"]

    assert web.run(*command, check=False, timeout=60).returncode == 0
    # The same check where nothing listens on PORT fails: it does check.
    assert web.run(*command, check=False, timeout=60, PORT=str(free_port())).returncode != 0
