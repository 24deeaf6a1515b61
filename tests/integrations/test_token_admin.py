"""Tokens are revoked in the admin, never deleted: the row and its trail stay."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from integrations import services
from integrations.models import ApiToken

pytestmark = pytest.mark.django_db

LIST = "/admin/integrations/apitoken/"


@pytest.fixture
def token(assigner):
    return services.api_token_mint(user=assigner, name="Jira").token


def test_a_superuser_cannot_delete_a_token_from_its_page(staff_client, token):
    page = staff_client.get(f"{LIST}{token.pk}/change/").content.decode()
    response = staff_client.post(f"{LIST}{token.pk}/delete/", {"post": "yes"})

    assert f"{token.pk}/delete/" not in page
    assert response.status_code == 403
    assert ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).exists()


def test_the_list_offers_revoke_and_not_delete(staff_client, token):
    actions = dict(staff_client.get(LIST).context["action_form"].fields["action"].choices)

    assert "revoke_selected" in actions
    assert "delete_selected" not in actions
    response = staff_client.post(
        LIST, {"action": "delete_selected", "_selected_action": [str(token.pk)], "post": "yes"}
    )
    assert response.status_code == 302  # "no action selected", nothing deleted
    assert ApiToken.objects.filter(pk=token.pk).exists()


def test_revoking_keeps_the_row_and_audits_it_as_the_staff_user(staff_client, staff, token):
    staff_client.post(LIST, {"action": "revoke_selected", "_selected_action": [str(token.pk)]})

    token.refresh_from_db()
    assert token.revoked_at is not None
    event = AuditEvent.objects.get(action="api_token_revoked")
    assert (event.user, event.subject_id, event.actor_kind) == (staff, token.pk, "user")
