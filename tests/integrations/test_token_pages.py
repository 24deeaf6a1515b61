"""Settings, API Tokens (the page) and the token admin."""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from urllib.parse import quote

import pytest
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from integrations import services, tokens
from integrations.models import ApiToken
from tests.harness.api import (
    PASSWORD,
    age_the_sign_in,
    form_key,
    mint_on_the_page,
    sign_in,
)

PAGE = "/settings/tokens/"
TOKEN_RE = re.compile(r"svc_[0-9A-Za-z]{36}")
BOTH_SCOPES = ["inbox", "sync"]  # the form comes with both ticked


@pytest.fixture
def signed_in(client, assigner):
    sign_in(client, assigner)
    return client


def test_the_page_needs_a_signed_in_user(client, db):
    response = client.get(PAGE)
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]
    assert client.post(PAGE, {"scopes": BOTH_SCOPES, "name": "x"}).status_code == 302
    assert not ApiToken.objects.exists()


def test_creating_a_token_shows_its_plaintext_once(signed_in, assigner):
    response = mint_on_the_page(signed_in, "Jira automation")
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
    response = signed_in.post(
        PAGE, {"scopes": BOTH_SCOPES, "name": "   ", "form_key": form_key(signed_in)}
    )
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


def test_revoking_asks_for_confirmation_naming_the_token(signed_in, assigner):
    token = services.api_token_mint(user=assigner, name="Jira automation").token
    services.api_token_mint(user=assigner, name="Other")

    list_page = signed_in.get(PAGE).content.decode()
    confirm = signed_in.get(f"{PAGE}{token.id}/revoke")

    assert f'href="{PAGE}{token.id}/revoke"' in list_page  # a link, not a revoking form
    assert confirm.status_code == 200
    html = confirm.content.decode()
    assert "Revoke “Jira automation”?" in html and token.prefix in html
    assert "Other" not in html
    assert f'method="post" action="{PAGE}{token.id}/revoke"' in html
    assert ApiToken.objects.get(pk=token.pk).revoked_at is None  # GET revokes nothing


def test_nobody_revokes_someone_elses_token(signed_in, outsider):
    token = services.api_token_mint(user=outsider, name="Theirs").token
    assert signed_in.post(f"{PAGE}{token.id}/revoke").status_code == 404
    assert ApiToken.objects.get().revoked_at is None


def test_the_forms_need_a_csrf_token(assigner):
    client = Client(enforce_csrf_checks=True)
    fresh = Client()
    sign_in(fresh, assigner)  # a recent sign-in, as the page needs
    client.cookies = fresh.cookies
    assert (
        client.post(
            PAGE, {"scopes": BOTH_SCOPES, "name": "Jira", "form_key": form_key(client)}
        ).status_code
        == 403
    )
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


# --- minted once: POST-redirect-GET, one-time form keys, unique live names -----------


def test_minting_redirects_and_the_plaintext_leaves_the_session_once_shown(signed_in):
    key = form_key(signed_in)
    response = signed_in.post(PAGE, {"scopes": BOTH_SCOPES, "name": "Jira", "form_key": key})

    assert response.status_code == 302 and response["Location"] == PAGE
    assert TOKEN_RE.search(response.content.decode()) is None
    shown = signed_in.get(PAGE)
    plaintext = TOKEN_RE.search(shown.content.decode()).group(0)
    assert "no-store" in shown["Cache-Control"]
    assert plaintext not in str(dict(signed_in.session))
    assert TOKEN_RE.search(signed_in.get(PAGE).content.decode()) is None


def test_a_resubmitted_mint_form_mints_nothing(signed_in):
    sent = {"name": "Jira", "scopes": BOTH_SCOPES, "form_key": form_key(signed_in)}
    signed_in.post(PAGE, sent)
    signed_in.get(PAGE)  # the plaintext, shown once

    again = signed_in.post(PAGE, sent)  # back button and "resend", or a double click

    assert again.status_code == 302
    assert ApiToken.objects.count() == 1
    page = signed_in.get(PAGE).content.decode()
    assert "no new token was created" in page
    assert TOKEN_RE.search(page) is None


def test_a_resubmitted_form_with_a_new_name_mints_nothing_either(signed_in):
    key = form_key(signed_in)
    signed_in.post(PAGE, {"scopes": BOTH_SCOPES, "name": "Jira", "form_key": key})
    signed_in.post(PAGE, {"scopes": BOTH_SCOPES, "name": "Jira 2", "form_key": key})
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["Jira"]


def test_a_live_tokens_name_is_refused_with_a_clear_error(signed_in, assigner):
    services.api_token_mint(user=assigner, name="Jira")

    response = signed_in.post(
        PAGE, {"scopes": BOTH_SCOPES, "name": "Jira", "form_key": form_key(signed_in)}
    )

    assert response.status_code == 400
    assert "You already have a live token named “Jira”" in response.content.decode()
    assert ApiToken.objects.count() == 1
    # The refused form can be sent again with another name (it carries a fresh key).
    key = re.search(r'name="form_key" value="([^"]+)"', response.content.decode()).group(1)
    assert (
        signed_in.post(PAGE, {"scopes": BOTH_SCOPES, "name": "Jira 2", "form_key": key}).status_code
        == 302
    )
    assert ApiToken.objects.count() == 2


def test_a_revoked_tokens_name_may_be_used_again(signed_in, assigner):
    old = services.api_token_mint(user=assigner, name="Jira").token
    signed_in.post(f"{PAGE}{old.id}/revoke")
    mint_on_the_page(signed_in, "Jira")
    assert ApiToken.objects.filter(name="Jira").count() == 2


def test_other_people_may_use_the_same_name(assigner, outsider):
    services.api_token_mint(user=assigner, name="Jira")
    services.api_token_mint(user=outsider, name="Jira")
    assert ApiToken.objects.filter(name="Jira").count() == 2


def test_the_database_refuses_two_live_tokens_with_one_name(assigner):
    from django.db import IntegrityError, transaction

    services.api_token_mint(user=assigner, name="Jira")
    with pytest.raises(IntegrityError), transaction.atomic():
        ApiToken.objects.create(user=assigner, name="Jira", prefix="svc_x", digest="d" * 64)


# --- re-authentication before minting -------------------------------------------------


def test_minting_after_an_old_sign_in_asks_for_the_password_and_keeps_nothing(signed_in, settings):
    key = form_key(signed_in)
    age_the_sign_in(signed_in, settings.ACCOUNT_REAUTHENTICATION_TIMEOUT + 1)

    response = signed_in.post(PAGE, {"scopes": BOTH_SCOPES, "name": "Jira", "form_key": key})

    assert response.status_code == 302
    assert response["Location"] == f"/accounts/reauthenticate/?next={quote(PAGE, safe='')}"
    assert not ApiToken.objects.exists()
    # The password brings the person back to the form; the refused POST is not replayed.
    done = signed_in.post(response["Location"], {"password": PASSWORD})
    assert (done.status_code, done["Location"]) == (302, PAGE)
    assert not ApiToken.objects.exists()
    mint_on_the_page(signed_in, "Jira")
    assert ApiToken.objects.get().name == "Jira"


def test_a_recent_sign_in_mints_without_asking_again(signed_in, settings):
    key = form_key(signed_in)
    age_the_sign_in(signed_in, settings.ACCOUNT_REAUTHENTICATION_TIMEOUT - 30)
    response = signed_in.post(PAGE, {"scopes": BOTH_SCOPES, "name": "Jira", "form_key": key})
    assert response["Location"] == PAGE
    assert ApiToken.objects.count() == 1


def test_a_session_without_a_recorded_sign_in_must_reauthenticate(client, assigner):
    client.force_login(assigner)
    response = client.post(PAGE, {"scopes": BOTH_SCOPES, "name": "Jira", "form_key": "any"})
    assert response["Location"].startswith("/accounts/reauthenticate/")
    assert not ApiToken.objects.exists()


def test_the_list_asks_for_the_password_first_after_an_old_sign_in(client, assigner):
    client.force_login(assigner)
    response = client.get(PAGE)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/reauthenticate/")


# --- expiry ---------------------------------------------------------------------------


def test_a_token_may_be_given_an_expiry_date_shown_on_the_page(signed_in, assigner):
    assigner.timezone = "Europe/Berlin"
    assigner.save()
    day = timezone.localdate() + dt.timedelta(days=30)

    page = mint_on_the_page(signed_in, "Jira", expires_on=day.isoformat()).content.decode()

    token = ApiToken.objects.get()
    in_berlin = token.expires_at.astimezone(zoneinfo.ZoneInfo("Europe/Berlin"))
    assert in_berlin.date() == day
    assert in_berlin.time() == dt.time.max  # works through the chosen day, in Berlin
    # Shown in the owner's zone (the date and the time may wrap apart: no tags between).
    assert f"{day.day} {day:%b %Y}, 23:59" in re.sub(r"<[^>]+>", "", page)


def test_an_expiry_in_the_past_is_refused(signed_in):
    yesterday = timezone.localdate() - dt.timedelta(days=2)
    response = signed_in.post(
        PAGE,
        {
            "scopes": BOTH_SCOPES,
            "name": "Jira",
            "expires_on": yesterday.isoformat(),
            "form_key": form_key(signed_in),
        },
    )
    assert response.status_code == 400
    assert "must be in the future" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_an_expired_token_is_marked_on_the_page(signed_in, assigner):
    services.api_token_mint(
        user=assigner, name="Jira", expires_at=timezone.now() + dt.timedelta(hours=1)
    )
    ApiToken.objects.update(expires_at=timezone.now() - dt.timedelta(hours=1))
    assert "Expired" in signed_in.get(PAGE).content.decode()


def test_the_admin_lists_the_expiry(admin_client_, assigner):
    expires = timezone.now() + dt.timedelta(days=3)
    services.api_token_mint(user=assigner, name="Jira", expires_at=expires)
    listing = admin_client_.get("/admin/integrations/apitoken/").content.decode()
    assert "column-expires_at" in listing
