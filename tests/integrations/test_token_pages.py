"""Settings, API Tokens (the page) and the token admin."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from audit.models import AuditEvent
from integrations import services, tokens
from integrations.models import ApiToken

PAGE = "/settings/tokens/"
TOKEN_RE = re.compile(r"svc_[0-9A-Za-z]{36}")


@pytest.fixture
def signed_in(client, assigner):
    client.force_login(assigner)
    return client


def test_the_page_needs_a_signed_in_user(client, db):
    response = client.get(PAGE)
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]
    assert client.post(PAGE, {"name": "x"}).status_code == 302
    assert not ApiToken.objects.exists()


def test_creating_a_token_shows_its_plaintext_once(signed_in, assigner):
    response = signed_in.post(PAGE, {"name": "Jira automation"})
    assert response.status_code == 200
    html = response.content.decode()
    plaintext = TOKEN_RE.search(html).group(0)
    token = ApiToken.objects.get()
    assert token.user == assigner and token.name == "Jira automation"
    assert token.digest == tokens.digest(plaintext)
    assert 'data-copy-target="new-token"' in html  # the copy button
    assert "no-store" in response["Cache-Control"]

    again = signed_in.get(PAGE).content.decode()
    assert plaintext not in again
    assert TOKEN_RE.search(again) is None
    assert "Jira automation" in again and token.prefix in again


def test_the_list_shows_name_prefix_created_and_last_used_but_never_the_digest(
    signed_in, assigner, outsider
):
    mine = services.api_token_mint(user=assigner, name="Mine").token
    ApiToken.objects.filter(pk=mine.pk).update(last_used_at=mine.created_at)
    theirs = services.api_token_mint(user=outsider, name="Theirs").token
    html = signed_in.get(PAGE).content.decode()
    assert "Mine" in html and mine.prefix in html
    assert "Never" not in html  # last used is shown
    assert mine.digest not in html
    assert "Theirs" not in html and theirs.prefix not in html


def test_a_blank_name_is_refused(signed_in):
    response = signed_in.post(PAGE, {"name": "   "})
    assert response.status_code == 400
    assert not ApiToken.objects.exists()
    assert TOKEN_RE.search(response.content.decode()) is None


def test_revoking_a_token(signed_in, assigner):
    token = services.api_token_mint(user=assigner, name="Jira").token
    response = signed_in.post(f"{PAGE}{token.id}/revoke")
    assert response.status_code == 302 and response["Location"] == PAGE
    assert ApiToken.objects.get().revoked_at is not None
    html = signed_in.get(PAGE).content.decode()
    assert "Revoked" in html
    assert f"{token.id}/revoke" not in html


def test_revoking_needs_post(signed_in, assigner):
    token = services.api_token_mint(user=assigner, name="Jira").token
    assert signed_in.get(f"{PAGE}{token.id}/revoke").status_code == 405
    assert ApiToken.objects.get().revoked_at is None


def test_nobody_revokes_someone_elses_token(signed_in, outsider):
    token = services.api_token_mint(user=outsider, name="Theirs").token
    assert signed_in.post(f"{PAGE}{token.id}/revoke").status_code == 404
    assert ApiToken.objects.get().revoked_at is None


def test_the_forms_need_a_csrf_token(assigner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(assigner)
    assert client.post(PAGE, {"name": "Jira"}).status_code == 403
    token = services.api_token_mint(user=assigner, name="Jira").token
    assert client.post(f"{PAGE}{token.id}/revoke").status_code == 403
    assert ApiToken.objects.get().revoked_at is None

    page = client.get(PAGE).content.decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    response = client.post(f"{PAGE}{token.id}/revoke", {"csrfmiddlewaretoken": csrf})
    assert response.status_code == 302
    assert ApiToken.objects.get().revoked_at is not None


# --- admin ---------------------------------------------------------------------------


@pytest.fixture
def admin_client_(client, make_user):
    admin = make_user("admin@example.com", is_staff=True, is_superuser=True)
    client.force_login(admin)
    return client


def test_the_admin_lists_tokens_without_their_digest(admin_client_, assigner):
    token = services.api_token_mint(user=assigner, name="Jira").token
    listing = admin_client_.get("/admin/integrations/apitoken/").content.decode()
    assert "Jira" in listing and token.prefix in listing and "lead@example.com" in listing
    assert token.digest not in listing
    detail = admin_client_.get(f"/admin/integrations/apitoken/{token.pk}/change/")
    assert detail.status_code == 200
    assert token.digest not in detail.content.decode()


def test_the_admin_cannot_add_or_edit_tokens(admin_client_, assigner):
    token = services.api_token_mint(user=assigner, name="Jira").token
    assert admin_client_.get("/admin/integrations/apitoken/add/").status_code == 403
    admin_client_.post(f"/admin/integrations/apitoken/{token.pk}/change/", {"name": "Renamed"})
    assert ApiToken.objects.get().name == "Jira"


def test_the_admin_revokes_selected_tokens(admin_client_, assigner):
    token = services.api_token_mint(user=assigner, name="Jira").token
    response = admin_client_.post(
        "/admin/integrations/apitoken/",
        {"action": "revoke_selected", "_selected_action": [str(token.pk)]},
    )
    assert response.status_code == 302
    assert ApiToken.objects.get().revoked_at is not None


def test_revoking_in_the_admin_is_audited_as_the_admin(admin_client_, assigner):
    token = services.api_token_mint(user=assigner, name="Jira").token
    admin_client_.post(
        "/admin/integrations/apitoken/",
        {"action": "revoke_selected", "_selected_action": [str(token.pk)]},
    )
    event = AuditEvent.objects.get(action="api_token_revoked")
    assert event.user.email == "admin@example.com"


def test_active_tokens_are_listed_before_revoked_ones(signed_in, assigner):
    services.api_token_mint(user=assigner, name="Older active")
    newer = services.api_token_mint(user=assigner, name="Newer revoked").token
    signed_in.post(f"{PAGE}{newer.id}/revoke")
    table = signed_in.get(PAGE).content.decode().split("<tbody>", 1)[1]
    assert table.index("Older active") < table.index("Newer revoked")
