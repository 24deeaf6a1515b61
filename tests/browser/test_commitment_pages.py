"""The commitment page and the dashboard in a real browser, at phone and
desktop size, each page checked (overflow, axe-core, screenshot): completing
a commitment moves the Flow Score on the dashboard; the timeline names the
token that created a commitment; a deep-link template set in Settings links
the external reference."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import Commitment, Status
from tests.harness.api import mint


@pytest.fixture
def lead(make_user):
    return make_user("lead@example.com", display_name="Lead")


@pytest.fixture
def knight(make_user):
    return make_user("knight@example.com", display_name="Knight")


def active(lead, knight, description: str, deadline: dt.datetime) -> Commitment:
    c = services.commitment_create_pending(
        actor=Actor.for_user(lead),
        assigner=lead,
        assignee=knight,
        description=description,
        deadline=deadline,
    )
    services.commitment_accept(actor=Actor.for_user(knight), commitment_id=c.pk)
    return c


def test_completing_a_commitment_moves_the_flow_score(page, sign_in, check_page, lead, knight):
    now = timezone.now()
    active(lead, knight, "Fix the drawbridge", now - dt.timedelta(days=2))  # overdue
    c = active(lead, knight, "Feed the swallows", now + dt.timedelta(days=3))
    sign_in(page, knight)

    page.goto("/dashboard/")
    assert page.locator("#flow-score").inner_text() == "0"
    assert page.locator("#flow-parts").inner_text() == "0 of 1 kept, 1 overdue"
    assert page.get_by_role("heading", name="Needs your attention").is_visible()
    check_page(page, "dashboard-before")

    page.goto(f"/commitments/{c.pk}")
    assert page.get_by_role("heading", level=1).inner_text() == "Feed the swallows"
    assert page.title().startswith("Feed the swallows")
    page.get_by_role("link", name="Mark completed…").click()
    page.wait_for_url(f"**/commitments/{c.pk}/complete/confirm")
    assert page.get_by_role("heading", name="Mark this commitment completed?").is_visible()
    check_page(page, "complete-confirm")
    c.refresh_from_db()
    assert c.status == Status.ACTIVE  # asking changed nothing
    page.get_by_role("button", name="Mark completed").click()
    page.wait_for_url(f"**/commitments/{c.pk}")
    assert "Marked completed." in page.locator(".messages").inner_text()
    check_page(page, "commitment-completed")

    page.navigate("Dashboard")
    page.wait_for_url("**/dashboard/")
    assert page.locator("#flow-score").inner_text() == "50"
    assert page.locator("#flow-parts").inner_text() == "1 of 2 kept, 1 overdue"
    # Today's point of the chart links to what moved it: this completion.
    today = timezone.localdate().isoformat()
    dot = page.locator(f'svg a[href="/dashboard/day/{today}/"]')
    assert "Flow Score 50; 1 kept" in dot.get_attribute("aria-label")
    check_page(page, "dashboard-after")
    page.goto(f"/dashboard/day/{today}/")
    assert page.get_by_role("link", name="Feed the swallows").is_visible()
    check_page(page, "dashboard-day")


def test_the_timeline_names_the_token(page, sign_in, check_page, lead, knight):
    token = mint(lead, name="Jira automation")
    response = page.request.post(
        "/api/v1/inbox",
        headers={"Authorization": f"Bearer {token}"},
        data={
            "assignerEmail": lead.email,
            "assigneeEmail": knight.email,
            "description": "Find a shrubbery",
            "deadline": "2030-03-01T17:00:00Z",
            "externalSystem": "jira",
            "externalId": "OPS-42",
        },
    )
    assert response.status == 201, response.text()
    sign_in(page, knight)

    page.goto(f"/commitments/{response.json()['id']}")

    timeline = page.locator(".timeline").inner_text()
    assert re.search(r"Asked for a handshake\s+by Lead via API token “Jira automation”", timeline)
    assert token[:8] not in page.content()
    check_page(page, "commitment-token-timeline")


def test_a_deep_link_template_links_the_external_reference(page, sign_in, check_page, lead, knight):
    c = services.commitment_create_pending(
        actor=Actor.for_user(lead),
        assigner=lead,
        assignee=knight,
        description="Slay the rabbit",
        deadline=None,
        external_system="jira",
        external_id="OPS-7",
    )
    sign_in(page, lead)

    page.goto(f"/commitments/{c.pk}")
    page.get_by_role("link", name="Link jira ids…").click()
    page.wait_for_url("**/settings/links/?system=jira")
    assert page.get_by_label("External system").input_value() == "jira"
    page.get_by_role("textbox", name="Link address").fill(
        "https://example.atlassian.net/browse/{externalId}"
    )
    page.get_by_role("button", name="Add link").click()
    page.wait_for_url("**/settings/links/")
    assert "now link to it" in page.locator(".messages").inner_text()
    check_page(page, "settings-deep-links")

    page.goto(f"/commitments/{c.pk}")
    link = page.get_by_role("link", name="jira:OPS-7")
    assert link.get_attribute("href") == "https://example.atlassian.net/browse/OPS-7"
    check_page(page, "commitment-deep-link")

    page.goto("/settings/")
    page.get_by_role("link", name="Deep links").click()
    page.wait_for_url("**/settings/links/")
    page.get_by_role("button", name="Delete the link for jira").click()
    page.wait_for_url("**/settings/links/")
    assert "No links yet." in page.content()


def test_decline_with_a_reason_from_the_commitment_page_and_the_asker_reads_it(
    page, sign_in, check_page, lead, knight
):
    c = services.commitment_create_pending(
        actor=Actor.for_user(lead),
        assigner=lead,
        assignee=knight,
        description="Slay the rabbit",
        deadline=None,
    )
    sign_in(page, knight)
    page.goto(f"/commitments/{c.pk}")
    page.get_by_role("link", name="Decline…").click()
    page.wait_for_url(f"**/commitments/{c.pk}/decline/confirm")
    page.get_by_label("Reason (optional)").fill("Too dangerous: it has big pointy teeth")
    check_page(page, "decline-confirm-reason")
    page.get_by_role("button", name="Decline", exact=True).click()
    page.wait_for_url(f"**/commitments/{c.pk}")
    c.refresh_from_db()
    assert c.status == Status.REFUSED

    # The asker reads the reason on the web, not only in the e-mail.
    page.context.clear_cookies()
    sign_in(page, lead)
    page.goto(f"/commitments/{c.pk}")
    timeline = page.locator(".timeline").inner_text()
    assert re.search(
        r"Declined\s+by Knight\s+Reason: Too dangerous: it has big pointy teeth", timeline
    )
    assert page.get_by_role("definition").filter(has_text="big pointy teeth").is_visible()
    assert page.get_by_role("link", name="Back to the dashboard").is_visible()
    check_page(page, "commitment-declined-reason")
