"""Every main page, at phone and desktop size: no horizontal overflow, no serious
or critical axe-core violation, a screenshot (check_page)."""

from __future__ import annotations

import pytest

SIGNED_IN_PAGES = [
    ("accord", "/"),
    ("dashboard", "/dashboard/"),
    ("capture", "/capture/"),
    ("settings-profile", "/settings/"),
    ("settings-tokens", "/settings/tokens/"),
    ("settings-notifications", "/settings/notifications/"),
    ("settings-webhooks", "/settings/webhooks/"),
    ("settings-trackers", "/settings/trackers/"),
    ("settings-model-keys", "/settings/model-keys/"),
    ("settings-security", "/settings/security/"),
    ("settings-email", "/accounts/email/"),
    ("settings-password", "/accounts/password/change/"),
    ("api-reference", "/api-reference"),
]
SIGNED_OUT_PAGES = [
    ("sign-in", "/accounts/login/"),
    ("sign-up", "/accounts/signup/"),
    ("password-reset", "/accounts/password/reset/"),
]
LONG_NAME = "Maximiliana Konstantinopoulou-Vanderbergh-Oppenheimer of the Long Names"


@pytest.fixture
def lived_in(make_user, settings):
    """A person whose pages have something on them: a long name, a token, a
    model key, a webhook, commitments both ways."""
    from audit.services import Actor
    from commitments import services
    from gather.services import model_key_set
    from integrations.services import api_token_mint
    from webhooks.services import webhook_endpoint_create

    settings.OUTBOUND_ALLOW_LOOPBACK = True  # the webhook's receiver is on this machine
    person = make_user("maximiliana@example.com", display_name=LONG_NAME, is_staff=True)
    colleague = make_user("colleague@example.com", display_name="Colleague")
    api_token_mint(user=person, name="Jira automation with a rather long name")
    model_key_set(user=person, provider="openai", key="sk-test-" + "x" * 40)
    webhook_endpoint_create(
        user=person,
        external_system="jira",
        url="http://127.0.0.1:9/commitments/events/a/rather/long/path/to/the/receiver",
    )
    actor = Actor.for_user(person)
    services.commitment_create_pending(
        actor=actor,
        assigner=person,
        assignee=colleague,
        description="Ship the report",
        deadline=None,
    )
    services.commitment_create_pending(
        actor=Actor.for_user(colleague),
        assigner=colleague,
        assignee=person,
        description="Review the quarterly numbers " * 4,
        deadline=None,
    )
    return person


@pytest.mark.parametrize(("name", "path"), SIGNED_IN_PAGES)
def test_every_signed_in_page_passes_the_page_check(
    page, sign_in, lived_in, check_page, name, path
):
    sign_in(page, lived_in)
    response = page.goto(path)
    assert response.status == 200, path
    assert page.get_by_role("heading", level=1).count() >= 1, path
    check_page(page, name)


@pytest.mark.parametrize(("name", "path"), SIGNED_OUT_PAGES)
def test_every_signed_out_page_passes_the_page_check(page, check_page, name, path):
    response = page.goto(path)
    assert response.status == 200, path
    check_page(page, name)


def test_the_admin_index_passes_the_page_check_for_staff(page, sign_in, lived_in, check_page):
    sign_in(page, lived_in)
    response = page.goto("/admin/")
    assert response.status == 200
    check_page(page, "admin-index")


def test_the_navigation_folds_into_a_menu_on_a_phone(page, sign_in, lived_in):
    sign_in(page, lived_in)
    page.goto("/settings/")
    dashboard = page.get_by_role("navigation", name="Main").get_by_role("link", name="Dashboard")
    menu = page.locator("summary", has_text="Menu")
    if page.viewport == "phone":
        assert menu.is_visible() and not dashboard.is_visible()
        menu.click()
        dashboard.click()
        assert page.url.endswith("/dashboard/")
    else:
        assert not menu.is_visible() and dashboard.is_visible()


def test_a_focused_control_shows_a_ring_and_a_long_name_is_cut(page, sign_in, lived_in):
    sign_in(page, lived_in)
    page.goto("/settings/")
    page.get_by_label("Display name").focus()
    outline = page.get_by_label("Display name").evaluate(
        "el => getComputedStyle(el).outlineStyle + ' ' + getComputedStyle(el).outlineWidth"
    )
    assert outline == "solid 3px"
    name = page.locator(".who-name")
    assert name.get_attribute("title") == LONG_NAME
    assert name.evaluate("el => el.scrollWidth > el.clientWidth")  # cut, with an ellipsis
