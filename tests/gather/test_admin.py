"""The provider-key admin is read-only and shows whose key it is, provider,
model, default and last four characters, never the key; an unreadable key
renders too."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.contrib import admin
from django.urls import reverse

from audit.admin_mixins import AuditedAdminMixin
from gather import services
from gather.models import ModelKey

pytestmark = pytest.mark.django_db

KEY = "sk-admin-visible-never-QR90"


def test_it_is_audited_and_read_only(staff, rf):
    model_admin = admin.site._registry[ModelKey]
    assert type(model_admin).__mro__[1] is AuditedAdminMixin
    request = rf.get("/")
    request.user = staff
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
    assert "key" not in model_admin.fields


def test_the_list_and_the_page_show_last4_never_the_key(client, staff, assigner, settings):
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    lost = services.model_key_set(user=staff, provider="anthropic", key="sk-lost-ZZ11")
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    stored = services.model_key_set(user=assigner, provider="openai", key=KEY, model="gpt-m")
    client.force_login(staff)

    listing = client.get(reverse("admin:gather_modelkey_changelist"))
    page = client.get(reverse("admin:gather_modelkey_change", args=[stored.pk]))
    lost_page = client.get(reverse("admin:gather_modelkey_change", args=[lost.pk]))

    assert listing.status_code == page.status_code == lost_page.status_code == 200
    for response in (listing, page):
        html = response.content.decode()
        assert "QR90" in html and "gpt-m" in html and assigner.email in html
        assert KEY not in html and "visible-never" not in html
