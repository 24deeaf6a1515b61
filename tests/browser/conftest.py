"""The browser harness: Debian's chromium driven by Playwright (never a browser
a test tool downloads), against pytest-django's live server.

Fixtures:
- `browser`: one headless chromium for these tests (skipped when chromium is
  not installed, failed instead under REQUIRE_SERVICES=1, as in CI): Debian's
  `chromium-headless-shell` (its chromium build's old headless mode, without
  the full browser's UI layers: half the CPU a test) when installed, else
  Debian's full `chromium` (`--headless`); `BROWSER_CHROMIUM` names another.
- `viewport`: parametrizes a test over the phone (390x844) and desktop
  (1280x900) sizes; `page` opens a fresh context of that size on the live
  server (`page.goto("/")` works: the base URL is set).
- `sign_in(page, user)`: signs a user in by handing the context a session
  cookie (a fresh password sign-in, as allauth records one), so a test spends
  no time on the login form it is not about.
- `mailbox`: the mail the live server sends (the locmem backend: the live
  server is a thread of the test's process), emptied for the test.
- `worker`: real Celery worker processes (nudges and webhooks queues) on the
  test's database and Redis, as deployed; the test needs PostgreSQL and Redis
  (mark it `postgres` and `redis`: the live server's rows must be committed
  where another process can read them).
- `check_page(page, name)`: what every page must pass — no horizontal
  overflow, no table wider than its own box (a wide table scrolls inside its
  wrapper, out of the page-wide check), no serious or critical axe-core
  violation. A failing check writes a screenshot of the page, and so does
  every check when `BROWSER_SCREENSHOTS` names a folder or `CI` is set (or a
  test asks, `check_page(page, name, screenshot=True)`): a full-page PNG
  in the screenshot folder (`BROWSER_SCREENSHOTS`, by default
  `var/screenshots/`), named `<name>-<viewport>.png`, its path returned.

Playwright's sync API runs an event loop in the test's thread, which makes
Django's async-safety guard refuse ORM calls made by the test itself (and by
pytest-django's database set-up); the ORM calls are sequential, on the test's
own connection, so the guard is lifted while the browser is open
(DJANGO_ALLOW_ASYNC_UNSAFE).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.urls import get_resolver

from tests.harness.browser import BrowserPage, assert_page_ok
from tests.harness.services import REQUIRE_SERVICES

CHROMIUM = (
    os.environ.get("BROWSER_CHROMIUM")
    or shutil.which("chromium-headless-shell")
    or shutil.which("chromium")
    or "/usr/bin/chromium"
)
VIEWPORTS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}
# Flags a root, headless, offline chromium needs: no sandbox as root, and no
# background connections (this machine's network refuses them, many at once).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
SCREENSHOTS = Path(
    os.environ.get("BROWSER_SCREENSHOTS")
    or Path(__file__).resolve().parents[2] / "var" / "screenshots"
)
# Every check keeps its screenshot when a folder is named or in CI; otherwise
# only a failing check writes one (a full-page PNG costs about a tenth of a
# check's CPU, and nobody looks at the passing ones on a developer's machine).
KEEP_SCREENSHOTS = bool(os.environ.get("BROWSER_SCREENSHOTS") or os.environ.get("CI"))


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.parent == Path(__file__).parent:
            item.add_marker(pytest.mark.browser)


# Package scope: the browser (and Playwright's event loop in this thread, which
# Django's async-safety guard sees) is gone, and the guard back, once the
# browser tests are done; the tests that run after them see neither.
@pytest.fixture(scope="package")
def browser():
    if os.environ.get("BROWSER_CHROMIUM") and not Path(CHROMIUM).is_file():
        pytest.fail(f"BROWSER_CHROMIUM names no file: {CHROMIUM}")
    if not Path(CHROMIUM).exists():
        message = (
            "needs Debian's chromium (apt-get install chromium-headless-shell, or chromium;"
            " ./scripts/test installs it)"
        )
        if REQUIRE_SERVICES:
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    # The live server is a thread of this process: import every view (and what
    # they import: DRF, the model SDKs) now, or the first page a test opens
    # takes 10 s and more on a busy machine and times out.
    get_resolver().reverse_dict

    guard = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()
    if guard is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.fixture(params=list(VIEWPORTS))
def viewport(request) -> str:
    return request.param


@pytest.fixture
def page(browser, live_server, viewport, settings):
    # Links the service writes into e-mails point at the live server.
    settings.SITE_URL = live_server.url
    context = browser.new_context(
        base_url=live_server.url,
        viewport=VIEWPORTS[viewport],
        locale="en-GB",
        timezone_id="UTC",
    )
    # Generous: the machine may be busy (CI runs other things beside).
    context.set_default_timeout(30_000)
    pw_page = context.new_page()
    errors: list[str] = []
    pw_page.on("pageerror", lambda exc: errors.append(str(exc)))
    page = BrowserPage(pw_page, viewport=viewport, live_url=live_server.url, js_errors=errors)
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def sign_in(live_server):
    from allauth.account.internal.flows.login import record_authentication
    from django.conf import settings as django_settings
    from django.test import Client, RequestFactory

    def sign_in(page: BrowserPage, user) -> None:
        client = Client()
        client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
        # Recorded as allauth records a password sign-in, so pages that ask for
        # a recent sign-in (API tokens, Webhooks, Model keys) take this one.
        session = client.session
        request = RequestFactory().get("/")
        request.session = session
        record_authentication(request, user, "password", email=user.email)
        session.save()
        cookie = client.cookies[django_settings.SESSION_COOKIE_NAME]
        page.context.add_cookies(
            [{"name": cookie.key, "value": cookie.value, "url": live_server.url}]
        )

    return sign_in


@pytest.fixture
def check_page():
    def check(page: BrowserPage, name: str, *, screenshot: bool = KEEP_SCREENSHOTS) -> Path | None:
        return assert_page_ok(page, name, SCREENSHOTS, keep_shot=screenshot)

    return check


@pytest.fixture
def mailbox(settings):
    from django.core import mail

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []
    return mail.outbox


@pytest.fixture
def worker(tmp_path, settings):
    """A nudge worker (with beat) and a webhook worker, on this test's database and
    Redis; killed at the end. Yields the two processes (their logs help a failure)."""
    from tests.harness.services import celery_worker, subprocess_env
    from tests.harness.webhooks import purge_queues, webhook_worker

    settings.OUTBOUND_ALLOW_LOOPBACK = True
    purge_queues(os.environ["REDIS_URL"])
    env = subprocess_env(tmp_path, OUTBOUND_ALLOW_LOOPBACK="1")
    with (
        celery_worker(env, tmp_path / "worker.log") as nudges,
        webhook_worker(env, tmp_path / "webhook-worker.log") as webhooks,
    ):
        nudges.wait_for_output("ready", timeout=60)
        webhooks.wait_for_output("ready", timeout=60)
        yield nudges, webhooks
