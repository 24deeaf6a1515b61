"""Settings, Tracker connections in a real browser: add a GitHub connection
(the URL and secret shown once), a delivery signed with that secret reaches
the live server, and the connection's page says what it did."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid

import httpx

from tests.harness.tracker_payloads import issues_event
from trackers.models import TrackerConnection


def test_add_a_connection_and_see_what_a_delivery_did(
    page, sign_in, make_user, check_page, live_server
):
    person = make_user("ada@example.com", display_name="Ada")
    make_user("knight@example.com", display_name="Knight")
    sign_in(page, person)
    page.goto("/settings/trackers/")
    check_page(page, "trackers-empty")
    page.get_by_role("combobox", name="Tracker").select_option("github")
    page.get_by_label("System name (optional)").fill("acme")
    page.get_by_label("People (optional)").fill("knight-gh=knight@example.com")
    page.get_by_role("button", name="Add connection").click()

    url = page.locator("#shown-url").inner_text()
    secret = page.locator("#shown-secret").inner_text()
    connection = TrackerConnection.objects.get(owner=person)
    assert url == f"{live_server.url}/api/v1/hooks/{connection.hook_id}"
    assert connection.secret == secret
    check_page(page, "trackers-added")
    page.reload()
    assert page.locator("#shown-secret").count() == 0

    body = json.dumps(issues_event("assigned")).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    response = httpx.post(
        url,
        content=body,
        headers={
            "Content-Type": "application/json",
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": signature,
        },
    )
    assert response.status_code == 200, response.text

    page.get_by_role("link", name="GitHub connection “acme”").first.click()
    page.get_by_text("Created a commitment for knight-gh").wait_for()
    check_page(page, "tracker-connection")
