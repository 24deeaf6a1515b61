"""The quick start (./scripts/serve) serves what production serves: the
product's own 404 page (never Django's yellow debug page listing every URL
pattern), its static files collected and served by WhiteNoise, on keys of its
own kept in VAR_DIR. Run live: scripts/_local_env.sh's `serve_local`, which is
./scripts/serve after its install step (the tests may not install into the
shared virtualenv), in a fresh environment with nothing of the tests' own."""

from __future__ import annotations

import os
import re
import subprocess
import uuid

import httpx
import pytest

from tests.harness.api import inbox_body
from tests.harness.services import ROOT, Process, free_port, wait_until
from tests.harness.settings import MODE_VARIABLES

pytestmark = pytest.mark.processes

# What the tests set for themselves (tests/settings.py, pytest-django) or point
# at their own services: a newcomer's shell has none of them.
NOT_IN_A_NEWCOMERS_SHELL = {*MODE_VARIABLES, "DJANGO_SETTINGS_MODULE", "SITE_URL", "EMAIL_BACKEND"}


@pytest.fixture(scope="module")
def quick_start(tmp_path_factory):
    var = tmp_path_factory.mktemp("quick-start")
    env = {k: v for k, v in os.environ.items() if k not in NOT_IN_A_NEWCOMERS_SHELL}
    env.update({"VAR_DIR": str(var), "PORT": str(free_port()), "WEB_CONCURRENCY": "1"})
    serve = ["bash", "-c", ". scripts/_local_env.sh && serve_local"]
    with Process(serve, env, var / "serve.log") as process:
        process.wait_for_output("Booting worker", timeout=180)
        base = f"http://127.0.0.1:{env['PORT']}"
        wait_until(lambda: _answers(base), timeout=30, what="the quick start answering")
        yield base, var, env["PORT"]


def _answers(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def get(base: str, path: str) -> httpx.Response:
    return httpx.get(base + path, headers={"Host": "localhost"}, timeout=10)


@pytest.mark.parametrize(
    "path", ["/no-such-page", "/commitments/not-an-id", "/settings/nothing-here/"]
)
def test_a_wrong_url_gets_the_products_404_not_the_debug_page(quick_start, path):
    base, _, _ = quick_start

    response = get(base, path)

    assert response.status_code == 404
    assert "Not found" in response.text
    assert "Using the URLconf" not in response.text  # Django's debug 404
    assert "DEBUG = True" not in response.text


def test_another_persons_commitment_asks_to_sign_in_first(quick_start):
    base, _, _ = quick_start

    response = get(base, f"/commitments/{uuid.uuid4()}")

    assert response.status_code == 302
    assert response.headers["Location"].startswith("/accounts/login/")


def test_the_pages_stylesheet_is_served_collected_and_hashed(quick_start):
    base, _, _ = quick_start
    page = get(base, "/accounts/login/")
    (stylesheet,) = re.findall(r'href="(/static/css/app\.[0-9a-f]{12}\.css)"', page.text)

    css = get(base, stylesheet)

    assert css.status_code == 200
    assert "immutable" in css.headers["Cache-Control"]


def newcomers_env(var) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in NOT_IN_A_NEWCOMERS_SHELL}
    env["VAR_DIR"] = str(var)
    return env


def test_a_user_made_with_scripts_manage_signs_in_over_plain_http(quick_start):
    """Production mode on localhost: the cookies come back over plain HTTP (a
    Secure-only cookie would not), CSRF passes, the Accord answers."""
    base, var, _ = quick_start
    made = subprocess.run(
        ["scripts/manage", "create_user", "new@example.com", "--password", "a long passphrase"],
        cwd=ROOT,
        env=newcomers_env(var),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    with httpx.Client(base_url=base, headers={"Host": "localhost:3000"}, timeout=10) as browser:
        form = browser.get("/accounts/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        signed_in = browser.post(
            "/accounts/login/",
            data={"login": "new@example.com", "password": "a long passphrase"},
            headers={"X-CSRFToken": csrf, "Referer": "http://localhost:3000/accounts/login/"},
        )
        assert signed_in.status_code == 302, signed_in.text[:2000]
        accord = browser.get("/")
        assert accord.status_code == 200
        assert "new@example.com" in accord.text or "Sign out" in accord.text


def test_it_runs_on_keys_of_its_own_kept_in_var(quick_start):
    _, var, _ = quick_start
    secret_key = (var / "secret_key").read_text().strip()

    assert len(secret_key) >= 32
    assert (var / "field_encryption_keys").read_text().strip()
    # ./scripts/manage finds the same keys.
    env = newcomers_env(var)
    code = "from django.conf import settings; print(settings.DEBUG, settings.SECRET_KEY)"
    shown = subprocess.run(
        ["scripts/manage", "shell", "--verbosity", "0", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["False", secret_key]


def manage(var, *args: str) -> str:
    done = subprocess.run(
        ["scripts/manage", *args],
        cwd=ROOT,
        env=newcomers_env(var),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_nudge_in_the_workers_log_has_a_link_a_newcomer_can_follow(quick_start):
    """The worker prints each e-mail to var/worker.log (the console backend):
    the nudge's link is there whole, not `http://localhost:3000/[redacted]`,
    while the token that made the request is nowhere."""
    base, var, port = quick_start
    for email in ("lead@example.com", "knight@example.com"):
        manage(var, "create_user", email, "--password", "a long passphrase")
    token = manage(var, "mint_token", "lead@example.com", "--name", "try").splitlines()[-1]

    created = httpx.post(
        f"{base}/api/v1/inbox",
        json=inbox_body(),
        headers={"Host": f"localhost:{port}", "Authorization": f"Bearer {token}"},
        timeout=10,
    )

    assert created.status_code == 201, created.text
    link = f"http://localhost:{port}/commitments/{created.json()['id']}"
    log = var / "worker.log"
    wait_until(lambda: link in log.read_text(), timeout=90, what="the nudge's link in the log")
    assert token not in log.read_text() + (var / "serve.log").read_text()
