"""/settings/: the profile form and the way to every other settings page."""

from __future__ import annotations

import pytest
from django.urls import Resolver404, resolve

from tests.harness.api import sign_in

pytestmark = pytest.mark.django_db


def test_it_sends_a_signed_out_visitor_to_sign_in(client):
    response = client.get("/settings/")

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/settings/")


def test_it_shows_the_profile_and_links_to_the_other_settings(client, assigner):
    client.force_login(assigner)

    page = client.get("/settings/").content.decode()

    assert "lead@example.com" in page
    assert 'name="display_name"' in page and 'value="Lead"' in page
    assert 'href="/settings/tokens/"' in page
    assert 'href="/settings/notifications/"' in page
    # Model keys are not built yet: named, but not a link.
    assert "Model keys" in page
    assert "/settings/keys/" not in page


def test_it_saves_display_name_and_timezone(client, assigner):
    client.force_login(assigner)

    response = client.post(
        "/settings/profile/", {"display_name": "The Lead", "timezone": "America/New_York"}
    )

    assert response.status_code == 302
    assert response["Location"] == "/settings/"
    assigner.refresh_from_db()
    assert (assigner.display_name, assigner.timezone) == ("The Lead", "America/New_York")
    assert "Profile saved." in client.get("/settings/").content.decode()


def test_it_changes_only_the_signed_in_users_profile(client, assigner, assignee):
    client.force_login(assignee)

    client.post("/settings/profile/", {"display_name": "Sir Knight", "timezone": "Asia/Tokyo"})

    assigner.refresh_from_db()
    assignee.refresh_from_db()
    assert (assigner.display_name, assigner.timezone) == ("Lead", "UTC")
    assert (assignee.display_name, assignee.timezone) == ("Sir Knight", "Asia/Tokyo")


def test_it_refuses_an_unknown_timezone(client, assigner):
    client.force_login(assigner)

    response = client.post("/settings/profile/", {"display_name": "X", "timezone": "Nowhere/City"})

    assert response.status_code == 400
    assert 'aria-invalid="true"' in response.content.decode()
    assigner.refresh_from_db()
    assert (assigner.display_name, assigner.timezone) == ("Lead", "UTC")


def test_profile_changes_need_a_csrf_token(assigner):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(assigner)

    response = client.post("/settings/profile/", {"display_name": "X", "timezone": "UTC"})

    assert response.status_code == 403
    assigner.refresh_from_db()
    assert assigner.display_name == "Lead"


def test_profile_url_only_takes_posts_for_changes(client, assigner):
    client.force_login(assigner)

    response = client.get("/settings/profile/")

    assert response.status_code == 302
    assert response["Location"] == "/settings/"


@pytest.mark.parametrize("path", ["/settings/tokens/", "/settings/notifications/"])
def test_it_leaves_the_integrations_settings_pages_alone(path):
    try:
        match = resolve(path)
    except Resolver404:
        return  # not built yet, and nothing of accounts' answers there
    assert not match.func.__module__.startswith("accounts")


def test_the_time_zone_is_searchable_among_the_known_zones(client, assigner):
    client.force_login(assigner)

    page = client.get("/settings/").content.decode()

    assert 'list="id_timezone-options"' in page
    assert '<datalist id="id_timezone-options">' in page
    assert '<option value="Europe/Berlin">' in page


def test_a_time_zone_typed_in_another_case_is_saved_in_its_own_spelling(client, assigner):
    client.force_login(assigner)

    client.post("/settings/profile/", {"display_name": "Lead", "timezone": "europe/berlin"})

    assigner.refresh_from_db()
    assert assigner.timezone == "Europe/Berlin"


def test_every_settings_page_shares_the_section_navigation(client, assigner):
    # Through the sign-in form: API tokens, Webhooks and Model keys want a
    # recent sign-in, which force_login does not record.
    sign_in(client, assigner)

    for path in [
        "/settings/",
        "/settings/tokens/",
        "/settings/notifications/",
        "/settings/webhooks/",
        "/settings/model-keys/",
        "/settings/links/",
    ]:
        page = client.get(path).content.decode()
        nav = page.split('<nav class="settings-nav" aria-label="Settings">')[1].split("</nav>")[0]
        for name, href in [
            ("Profile", "/settings/"),
            ("API tokens", "/settings/tokens/"),
            ("Notifications", "/settings/notifications/"),
            ("Webhooks", "/settings/webhooks/"),
            ("Model keys", "/settings/model-keys/"),
            ("Deep links", "/settings/links/"),
        ]:
            assert f'href="{href}"' in nav and name in nav, (path, name)
        assert f'href="{path}" aria-current="page"' in nav
