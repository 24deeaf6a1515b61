"""The API reference in a real browser: the read API's routes are listed, and
Try it out, authorised with a token, lists the person's commitments and reads
one (docs/pages.md, "The API reference")."""

from __future__ import annotations

import re

from audit.services import Actor
from commitments import services
from integrations.services import api_token_mint


def test_try_it_out_lists_and_reads_with_a_token(page, sign_in, make_user, check_page):
    person = make_user("ada@example.com", display_name="Ada")
    colleague = make_user("grace@example.com", display_name="Grace")
    made = services.commitment_create_pending(
        actor=Actor.for_user(person),
        assigner=person,
        assignee=colleague,
        description="Ship the quarterly report",
        deadline=None,
        external_system="jira",
        external_id="OPS-42",
    )
    token = api_token_mint(user=person, name="Reader", scopes=["read"]).plaintext
    sign_in(page, person)
    page.goto("/api-reference")
    listing = page.locator("#operations-Read_API-commitments_list")
    reading = page.locator("#operations-Read_API-commitments_retrieve")
    listing.wait_for()
    assert reading.count() == 1
    check_page(page, "api-reference-read-api")

    page.get_by_role("button", name=re.compile("Authorize")).first.click()
    dialog = page.locator(".dialog-ux")
    bearer = dialog.locator(".auth-container").filter(has_text="bearerAuth")
    bearer.locator("input").fill(token)
    bearer.locator("button.authorize").click()
    dialog.get_by_role("button", name="Close").first.click()

    listing.locator(".opblock-summary").first.click()
    listing.get_by_role("button", name="Try it out").click()
    listing.get_by_role("button", name="Execute").click()
    status = listing.locator(".live-responses-table tr.response .response-col_status").first
    status.wait_for()
    assert status.inner_text().strip() == "200"
    assert str(made.pk) in listing.locator(".live-responses-table").inner_text()

    reading.locator(".opblock-summary").first.click()
    reading.get_by_role("button", name="Try it out").click()
    reading.locator("input[placeholder='id']").fill(str(made.pk))
    reading.get_by_role("button", name="Execute").click()
    status = reading.locator(".live-responses-table tr.response .response-col_status").first
    status.wait_for()
    assert status.inner_text().strip() == "200"
    assert "Pending_Handshake" in reading.locator(".live-responses-table").inner_text()
