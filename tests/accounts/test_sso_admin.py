"""SSO providers in the admin: the secret is written, stored encrypted, never
shown nor audited; allauth's own app and token tables have no admin page."""

from __future__ import annotations

import pytest
from django.db import connection

from accounts.models import SsoProvider
from audit.models import AuditAction, AuditEvent

pytestmark = pytest.mark.django_db

SECRET = "typed-into-the-admin"


def form(**overrides) -> dict:
    return {
        "name": "Acme SSO",
        "slug": "acme-sso",
        "issuer": "https://id.acme.example",
        "client_id": "commitments",
        "client_secret": SECRET,
        "domains": "Acme.example, corp.example",
        "enabled": "on",
        **overrides,
    }


def test_staff_adds_a_provider_whose_secret_is_stored_encrypted_and_not_audited(staff_client):
    response = staff_client.post("/admin/accounts/ssoprovider/add/", form())

    assert response.status_code == 302, response.context["adminform"].form.errors
    provider = SsoProvider.objects.get()
    assert provider.client_secret == SECRET
    assert provider.domains == ["acme.example", "corp.example"]
    with connection.cursor() as cursor:
        cursor.execute("select client_secret from accounts_ssoprovider")
        assert SECRET not in cursor.fetchone()[0]
    event = AuditEvent.objects.get(action=AuditAction.ADMIN_ADDED)
    assert "client_secret" in event.payload["fields"]
    assert SECRET not in str(event.payload)


def test_the_change_form_never_shows_the_secret_and_keeps_it_when_left_empty(staff_client):
    staff_client.post("/admin/accounts/ssoprovider/add/", form())
    provider = SsoProvider.objects.get()

    page = staff_client.get(f"/admin/accounts/ssoprovider/{provider.pk}/change/")
    assert SECRET not in page.content.decode()
    assert "/accounts/oidc/acme-sso/login/callback/" in page.content.decode()

    response = staff_client.post(
        f"/admin/accounts/ssoprovider/{provider.pk}/change/",
        form(client_secret="", enabled=""),
    )
    assert response.status_code == 302
    provider.refresh_from_db()
    assert provider.client_secret == SECRET and not provider.enabled


def test_allauths_app_and_token_tables_have_no_admin_page(staff_client):
    assert staff_client.get("/admin/socialaccount/socialapp/").status_code == 404
    assert staff_client.get("/admin/socialaccount/socialtoken/").status_code == 404
