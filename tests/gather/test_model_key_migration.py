"""gather 0002: ProviderKey becomes ModelKey. Stored keys read back unchanged
under the new name, and staff keep the admin permission they had (Django does
not rename permission codenames by itself); reversing gives the old names
back."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from tests.harness.migrations import latest, migrate, schema_before

BEFORE = [("gather", "0001_provider_keys")]
KEY = "sk-kept-across-the-rename-WXYZ"


def gather_codenames() -> set[str]:
    return set(
        Permission.objects.filter(content_type__app_label="gather").values_list(
            "codename", flat=True
        )
    )


@pytest.fixture
def old_schema():
    """The database as the code before 0002 made it, and its models."""
    with schema_before(BEFORE) as apps:
        yield apps


@pytest.mark.django_db(transaction=True)
def test_stored_keys_and_staff_permissions_survive_the_rename(old_schema):
    user = old_schema.get_model("accounts", "User").objects.create(
        email="staff@example.com", is_staff=True
    )
    old_schema.get_model("gather", "ProviderKey").objects.create(
        user=user, provider="openai", key=KEY, model="gpt-m", is_default=True, last4="WXYZ"
    )
    assert gather_codenames() == {f"{a}_providerkey" for a in ("add", "change", "delete", "view")}
    user.user_permissions.add(Permission.objects.get(codename="view_providerkey").pk)

    migrate(latest())

    from django.contrib.auth import get_user_model

    from gather.models import ModelKey

    stored = ModelKey.objects.get()
    assert (stored.key, stored.model, stored.is_default) == (KEY, "gpt-m", True)
    assert ModelKey._meta.db_table == "gather_modelkey"
    assert gather_codenames() == {f"{a}_modelkey" for a in ("add", "change", "delete", "view")}
    staff = get_user_model().objects.get(pk=user.pk)
    assert staff.has_perm("gather.view_modelkey")
    assert list(staff.model_keys.all()) == [stored]

    migrate(BEFORE)  # and back: the old names, for the code before
    assert gather_codenames() == {f"{a}_providerkey" for a in ("add", "change", "delete", "view")}
