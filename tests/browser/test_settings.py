"""Settings in a real browser: a token shown once, the notification channel's
URL field only for the chat channels, a webhook registered and tested through a
real worker."""

from __future__ import annotations

import pytest

from integrations.models import ApiToken
from tests.harness.webhooks import Receiver
from webhooks.models import WebhookEndpoint


def test_a_new_token_is_shown_once_and_gone_on_reload(page, sign_in, make_user, check_page):
    person = make_user("ada@example.com", display_name="Ada")
    sign_in(page, person)
    page.goto("/settings/tokens/")
    page.get_by_label("Name").fill("Jira automation")
    page.get_by_role("button", name="Create token").click()

    shown = page.locator("#new-token").inner_text()
    assert shown.startswith("svc_")
    token = ApiToken.objects.get(user=person)
    assert shown.startswith(token.prefix)
    assert page.locator("td").filter(has_text="Jira automation").count() == 1
    check_page(page, "token-minted")

    page.reload()
    assert page.locator("#new-token").count() == 0
    assert shown not in page.content()
    assert page.locator("td").filter(has_text="Jira automation").count() == 1
    check_page(page, "tokens-after-reload")


def test_a_token_limited_to_one_scope_and_its_networks(page, sign_in, make_user, check_page):
    person = make_user("ada@example.com", display_name="Ada")
    sign_in(page, person)
    page.goto("/settings/tokens/")
    page.get_by_label("Name").fill("Office sync")
    assert page.get_by_label("sync: complete them").is_checked()
    page.get_by_label("inbox: create commitments").uncheck()
    page.get_by_label("read: read your commitments").uncheck()
    page.get_by_label("Allowed client networks").fill("203.0.113.0/24\n2001:DB8::/32")
    page.get_by_role("button", name="Create token").click()

    assert page.locator("#new-token").inner_text().startswith("svc_")
    token = ApiToken.objects.get(user=person)
    assert (token.scopes, token.networks) == (["sync"], ["203.0.113.0/24", "2001:db8::/32"])
    row = page.locator("tr").filter(has_text="Office sync")
    assert row.locator(".token-scopes").inner_text() == "sync"
    assert "2001:db8::/32" in row.inner_text()
    check_page(page, "token-limited")


def test_a_read_only_token_reads_and_may_not_create(
    page, sign_in, make_user, check_page, live_server
):
    import json
    import urllib.error
    import urllib.request

    person = make_user("ada@example.com", display_name="Ada")
    sign_in(page, person)
    page.goto("/settings/tokens/")
    page.get_by_label("Name").fill("Dashboard reader")
    for scope in ("inbox", "sync", "read"):  # every scope, as the form comes
        assert page.get_by_role("checkbox", name=f"{scope}: ").is_checked()
    page.get_by_label("inbox: create commitments").uncheck()
    page.get_by_label("sync: complete them").uncheck()
    page.get_by_role("button", name="Create token").click()

    plaintext = page.locator("#new-token").inner_text()
    token = ApiToken.objects.get(user=person)
    assert token.scopes == ["read"]
    row = page.locator("tr").filter(has_text="Dashboard reader")
    assert row.locator(".token-scopes").inner_text() == "read"
    check_page(page, "token-read-only")

    def call(path: str, body: bytes | None = None) -> tuple[int, dict]:
        request = urllib.request.Request(
            live_server.url + path,
            data=body,
            headers={"Authorization": f"Bearer {plaintext}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as refused:
            return refused.code, json.load(refused)

    assert call("/api/v1/commitments") == (200, {"results": [], "next": None})
    status, answer = call("/api/v1/inbox", b"{}")
    assert (status, answer["error"]) == (403, "forbidden")
    assert "'inbox' scope" in answer["message"]


def test_the_chat_url_field_is_there_only_for_chat_channels(
    page, sign_in, make_user, check_page, settings
):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    sign_in(page, make_user("ada@example.com"))
    page.goto("/settings/notifications/")
    url_field = page.get_by_label("Chat URL (Slack or Teams)")
    assert page.get_by_role("radio", name="E-mail").is_checked()
    assert not url_field.is_visible()
    check_page(page, "notifications-email")

    page.get_by_role("radio", name="Slack").check()
    assert url_field.is_visible()
    url_field.fill("https://example.com/not/slack")
    page.get_by_role("button", name="Save", exact=True).click()
    page.get_by_text("starts with https://hooks.slack.com/").wait_for()
    check_page(page, "notifications-slack-refused")


@pytest.mark.processes
@pytest.mark.postgres
@pytest.mark.redis
def test_register_a_webhook_and_send_a_test_through_a_real_worker(
    page, sign_in, make_user, check_page, worker
):
    person = make_user("ada@example.com")
    sign_in(page, person)
    with Receiver() as receiver:
        page.goto("/settings/webhooks/")
        page.get_by_label("External system").fill("jira")
        page.get_by_label("URL").fill(receiver.url)
        page.get_by_role("button", name="Add endpoint").click()

        secret = page.locator("#new-secret").inner_text()
        assert secret
        endpoint = WebhookEndpoint.objects.get(user=person)
        assert endpoint.url == receiver.url
        check_page(page, "webhook-registered")

        page.get_by_role("button", name="Send test event").click()
        page.get_by_text("Test event (commitment.test) queued").wait_for()
        (hit,) = receiver.wait_for_hits(1, timeout=30)
        assert b"commitment.test" in hit.body

    page.reload()
    assert secret not in page.content()
    check_page(page, "webhook-tested")


def test_a_radio_button_is_followed_by_its_label(page, sign_in, make_user):
    sign_in(page, make_user("ada@example.com"))
    page.goto("/settings/notifications/")
    group = page.get_by_role("group", name="Commented")
    box = group.get_by_role("radio", name="Not at all")
    label = group.locator("label").filter(has_text="Not at all")

    assert label.inner_text().strip() == "Not at all"  # no colon after a radio button
    check, said = box.bounding_box(), label.bounding_box()
    # The box at the start of its label, on its line.
    assert said["x"] - 2 <= check["x"] <= said["x"] + 16
    assert abs((check["y"] + check["height"] / 2) - (said["y"] + said["height"] / 2)) < 6
