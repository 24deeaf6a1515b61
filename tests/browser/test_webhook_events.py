"""Settings, Webhooks: an endpoint chooses the conversation's events it also
receives (issue 26, point 7), at phone and desktop size, and without
JavaScript (a plain form of checkboxes under a native <details>)."""

from __future__ import annotations

import pytest

from tests.harness.browser import BrowserPage
from webhooks.models import WebhookEndpoint
from webhooks.payloads import CONTRACT_EVENTS
from webhooks.services import webhook_endpoint_create

URL = "http://127.0.0.1:9/hooks/commitments"  # loopback: never called here


@pytest.fixture(autouse=True)
def _loopback(settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True


def endpoints_of(person) -> tuple[WebhookEndpoint, WebhookEndpoint]:
    jira, _ = webhook_endpoint_create(user=person, external_system="jira", url=URL)
    linear, _ = webhook_endpoint_create(
        user=person, external_system="linear", url=URL, events=["commitment.commented"]
    )
    return jira, linear


def card(page, endpoint: WebhookEndpoint):
    return page.locator("section.card", has=page.locator(f"#endpoint-{endpoint.pk}"))


def test_choose_the_events_of_an_endpoint(page, sign_in, make_user, check_page):
    person = make_user("ada@example.com")
    jira, linear = endpoints_of(person)
    sign_in(page, person)
    page.goto("/settings/webhooks/")
    jira_card = card(page, jira)
    assert "Sends the four status events." in jira_card.inner_text()
    assert "and commitment.commented." in card(page, linear).inner_text()

    jira_card.get_by_text("Choose events").click()
    check_page(page, "webhook-events-open")
    withdrawn = jira_card.get_by_label("commitment.withdrawn", exact=False)
    proposed = jira_card.get_by_label("commitment.proposed", exact=False)
    assert not withdrawn.is_checked()
    withdrawn.check()
    proposed.check()
    page.get_by_role("button", name="Save the events of the jira endpoint").click()
    page.get_by_text("Saved the events of the jira endpoint").wait_for()

    jira.refresh_from_db()
    linear.refresh_from_db()
    assert jira.events == [*CONTRACT_EVENTS, "commitment.proposed", "commitment.withdrawn"]
    assert linear.chosen_events == ["commitment.commented"]  # the other endpoint's stays
    text = card(page, jira).inner_text()
    assert "Sends the four status events, commitment.proposed and commitment.withdrawn." in text
    check_page(page, "webhook-events-saved")


def test_choosing_events_works_without_javascript(browser, live_server, sign_in, make_user):
    person = make_user("ada@example.com")
    jira, _ = endpoints_of(person)
    context = browser.new_context(
        base_url=live_server.url, java_script_enabled=False, viewport={"width": 390, "height": 844}
    )
    try:
        page = BrowserPage(context.new_page(), viewport="phone", live_url=live_server.url)
        sign_in(page, person)
        page.goto("/settings/webhooks/")
        jira_card = card(page, jira)
        jira_card.get_by_text("Choose events").click()  # <details>: no script needed
        jira_card.get_by_label("commitment.reassigned", exact=False).check()
        page.get_by_role("button", name="Save the events of the jira endpoint").click()
        page.get_by_text("Saved the events of the jira endpoint").wait_for()
    finally:
        context.close()
    jira.refresh_from_db()
    assert jira.chosen_events == ["commitment.reassigned"]
