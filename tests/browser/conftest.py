"""The browser harness: Debian's chromium driven by Playwright (never a browser
a test tool downloads), against pytest-django's live server.

Fixtures:
- `browser`: one headless chromium for the session (skipped when chromium is
  not installed, failed instead under REQUIRE_SERVICES=1, as in CI).
- `viewport`: parametrizes a test over the phone (390x844) and desktop
  (1280x900) sizes; `page` opens a fresh context of that size on the live
  server (`page.goto("/")` works: the base URL is set).
- `sign_in(page, user)`: signs a user in by handing the context a session
  cookie (a fresh password sign-in, as allauth records one), so a test spends
  no time on the login form it is not about.
- `check_page(page, name)`: what every page must pass — no horizontal
  overflow, no serious or critical axe-core violation — and a screenshot
  written to the screenshot folder (`BROWSER_SCREENSHOTS`, by default
  `var/screenshots/`), named `<name>-<viewport>.png`.

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

from tests.conftest import REQUIRE_SERVICES

from .support import BrowserPage, assert_page_ok

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
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


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.parent == Path(__file__).parent:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        message = "needs Debian's chromium (apt-get install chromium; ./scripts/test installs it)"
        if REQUIRE_SERVICES:
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

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
    # The live server runs in this process: load the URLconf (and every view
    # module with it) here, so the first page a test opens does not pay for it.
    get_resolver().url_patterns
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
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def check(page: BrowserPage, name: str) -> Path:
        return assert_page_ok(page, name, SCREENSHOTS)

    return check
