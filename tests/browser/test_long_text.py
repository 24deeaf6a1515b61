"""Long text at phone and desktop size: a 1,900-character description made the
Accord's table 2,178 px wide in its 976 px box (its first Accept button at
x=2240), and the dashboard's; the commitment page's heading was a screen of
bold text; on the settings pages at 1280 px the nudges table hid its status,
three tokens cut Revoke to a sliver, webhook deliveries hid attempts and
responses; a long unbroken word was clipped on a phone card.

A wide table scrolls inside its wrapper, so the page-wide overflow check of
`check_page` never saw these: `tables_overflowing` checks every table against
its own box, cells and buttons included (check_page runs it too)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import OutboxEvent
from integrations.services import api_token_mint
from notifications.models import NudgeDelivery
from relay import outbox
from tests.harness.browser import tables_overflowing
from tests.harness.webhook_pages import delivery_row, endpoint_for

# 1,900 characters of words, one paragraph.
LONG = ("Review the quarterly numbers with finance and write down what changed " * 28)[:1900]
# One word longer than a phone is wide (a URL pasted with no spaces).
UNBROKEN = "https://tracker.example.com/" + "very-long-path-segment" * 12
LONG_NAME = "Maximiliana Konstantinopoulou-Vanderbergh-Oppenheimer of the Long Names"


@pytest.fixture
def people(make_user, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    lead = make_user("lead@example.com", display_name=LONG_NAME)
    knight = make_user("knight@example.com", display_name="Knight")
    as_lead, as_knight = Actor.for_user(lead), Actor.for_user(knight)
    # Asked of the knight: waiting (the long one first), and one in progress.
    services.commitment_create_pending(
        actor=as_lead, assigner=lead, assignee=knight, description=LONG, deadline=None
    )
    services.commitment_create_pending(
        actor=as_lead, assigner=lead, assignee=knight, description=UNBROKEN, deadline=None
    )
    active = services.commitment_create_pending(
        actor=as_lead,
        assigner=lead,
        assignee=knight,
        description=f"{UNBROKEN}\n{LONG}",
        deadline=None,
    )
    services.commitment_accept(actor=as_knight, commitment_id=active.pk)
    # Asked by the knight: the dashboard's table, a decline and a draft.
    services.commitment_create_pending(
        actor=as_knight, assigner=knight, assignee=lead, description=LONG, deadline=None
    )
    declined = services.commitment_create_pending(
        actor=as_knight, assigner=knight, assignee=lead, description=UNBROKEN, deadline=None
    )
    services.commitment_decline(actor=as_lead, commitment_id=declined.pk, reason=LONG[:500])
    services.commitment_create_draft(actor=as_knight, assignee=lead, description=LONG)
    # Nudges to the knight about them, some failed with a long error.
    for event in OutboxEvent.objects.order_by("pk"):
        outbox.outbox_event_dispatch(event_id=event.pk)
    NudgeDelivery.objects.filter(recipient=knight).update(
        status="failed", last_error="SMTP 550 " + "mailbox unavailable " * 20 + UNBROKEN
    )
    # Three tokens with long names and networks.
    for n in range(3):
        api_token_mint(
            user=knight,
            name=f"Jira automation for the platform team's release train number {n}",
            networks=["203.0.113.0/24", "2001:db8:1234:5678::/64"],
            expires_at=timezone.now() + timezone.timedelta(days=30),
        )
    # A webhook endpoint with long responses and errors.
    endpoint = endpoint_for(knight, url="http://127.0.0.1:9/" + "receiver/" * 10)
    for status in ("failed", "pending", "delivered"):
        delivery_row(
            endpoint,
            active,
            status=status,
            attempts=7,
            status_code=502,
            excerpt="<html><body>" + "Bad gateway from the upstream proxy " * 8 + UNBROKEN,
            error="Connection reset by peer " * 8,
        )
    return knight


def box(locator) -> dict:
    return locator.bounding_box()


def assert_inside(inner: dict, outer: dict, what: str) -> None:
    assert inner["x"] >= outer["x"] - 1 and inner["x"] + inner["width"] <= (
        outer["x"] + outer["width"] + 1
    ), f"{what} at x={inner['x']:.0f}..{inner['x'] + inner['width']:.0f} is outside {outer}"


def assert_tables_fit(page, name: str) -> None:
    culprits = tables_overflowing(page)
    assert not culprits, f"{name} at {page.viewport} size: {culprits}"


def viewport_box(page) -> dict:
    size = page.viewport_size
    return {"x": 0, "y": 0, "width": size["width"], "height": size["height"]}


def test_the_accord_keeps_long_descriptions_in_its_box(page, sign_in, people, check_page):
    sign_in(page, people)
    page.goto("/")
    assert_tables_fit(page, "accord")
    # The first Accept button is where a person can press it.
    accept = page.get_by_role("button", name="Accept").first
    assert_inside(box(accept), viewport_box(page), "the first Accept button")
    assert_inside(box(accept), box(page.locator("main")), "the first Accept button")
    # A row is headed by a short line; the rest of the description below it.
    row = page.locator("#accord-waiting").locator("..").locator("tr", has_text="Review the")
    link = row.get_by_role("link").first
    assert len(link.inner_text()) <= 80 and link.inner_text().endswith("…")
    assert row.locator(".description-body").is_visible()
    # The unbroken word wraps inside its card instead of being clipped.
    word = page.locator("td.description", has_text="very-long-path-segment").first
    assert word.evaluate("el => el.scrollWidth <= el.clientWidth + 1")
    check_page(page, "accord-long-text")


def test_the_dashboard_keeps_long_descriptions_in_its_box(page, sign_in, people, check_page):
    sign_in(page, people)
    page.goto("/dashboard/")
    assert_tables_fit(page, "dashboard")
    for item in page.locator(".attention-list > li").all():
        assert_inside(box(item), box(page.locator("#attention")), "an attention item")
    check_page(page, "dashboard-long-text")


def test_the_commitment_page_heads_a_long_description_with_a_line(
    page, sign_in, people, check_page
):
    sign_in(page, people)
    page.goto("/")
    page.locator("#accord-active").locator("..").get_by_role("link").first.click()
    heading = page.get_by_role("heading", level=1)
    assert heading.inner_text() == UNBROKEN[:79] + "…"
    # A heading of a few lines, not a screen of bold text; the rest below.
    lines = box(heading)["height"] / heading.evaluate(
        "el => parseFloat(getComputedStyle(el).lineHeight)"
    )
    assert round(lines) <= (2 if page.viewport == "desktop" else 4), lines
    assert_inside(box(heading), box(page.locator("main")), "the heading")
    body = page.locator(".commitment-body")
    assert body.inner_text().startswith("…" + UNBROKEN[79:99])
    assert LONG[:60] in body.inner_text()
    assert_inside(box(body), box(page.locator("main")), "the description's body")
    check_page(page, "commitment-long-text")


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("settings-tokens", "/settings/tokens/"),
        ("settings-notifications", "/settings/notifications/"),
        ("settings-webhooks", "/settings/webhooks/"),
    ],
)
def test_settings_tables_keep_every_column_in_their_box(
    page, sign_in, people, check_page, name, path
):
    sign_in(page, people)
    page.goto(path)
    assert page.locator(".table-wrap table").count() >= 1
    assert_tables_fit(page, name)
    for wrap in page.locator(".table-wrap").all():
        # (On a phone the header is visually hidden: each cell is named instead.)
        for head in wrap.locator("thead th").all():
            if head.evaluate("el => el.closest('thead').getBoundingClientRect().width > 1"):
                assert_inside(box(head), box(wrap), f"the column {head.inner_text()!r}")
    for revoke in page.get_by_role("link", name="Revoke").all():
        revoke_box = box(revoke)
        assert revoke_box["width"] >= 60, f"Revoke is {revoke_box['width']:.0f} px wide"
        assert_inside(revoke_box, box(revoke.locator("xpath=ancestor::td")), "Revoke")
        assert_inside(revoke_box, viewport_box(page), "Revoke")
    check_page(page, f"{name}-long-text")
