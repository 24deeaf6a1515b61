"""The admin's webhook endpoints and deliveries: what the owner sees on the
Webhooks page, for staff, read-only, never a secret; and one action, replay,
through the service and on the audit trail with the staff member as actor."""

from __future__ import annotations

import pytest
from django.contrib.admin import helpers

from audit.models import AuditEvent
from tests.harness.webhook_pages import (
    delivery_row,
    endpoint_for,
    mapped_commitment,
    resolve_every_name_to,
)
from webhooks import services
from webhooks.models import WebhookAttempt, WebhookDelivery
from webhooks.tasks import deliver_webhook

URL = "https://hooks.example.com/hook/credential-in-the-path?key=also-secret"
ENDPOINTS = "/admin/webhooks/webhookendpoint/"
DELIVERIES = "/admin/webhooks/webhookdelivery/"

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _network(settings, monkeypatch):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    resolve_every_name_to(monkeypatch)


@pytest.fixture
def rotated(assigner):
    """An endpoint in the middle of a rotation: two secrets on the row."""
    endpoint = endpoint_for(assigner, url=URL)
    services.webhook_endpoint_rotate_secret(endpoint=endpoint)
    endpoint.refresh_from_db()
    assert endpoint.previous_secret and endpoint.secret
    return endpoint


def test_staff_see_endpoints_without_their_secrets_or_the_path_of_their_url(staff_client, rotated):
    for url in (ENDPOINTS, f"{ENDPOINTS}{rotated.pk}/change/"):
        response = staff_client.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        assert "https://hooks.example.com/…" in html
        assert "credential-in-the-path" not in html and "also-secret" not in html
        assert rotated.secret not in html and rotated.previous_secret not in html
        assert "whsec_" not in html


def test_staff_see_a_delivery_with_its_attempts_response_and_body_read_only(
    staff_client, assigner, assignee
):
    endpoint = endpoint_for(assigner, url=URL)
    commitment = mapped_commitment(assigner, assignee, external_id="OPS-9")
    delivery = delivery_row(
        endpoint, commitment, status="failed", attempts=8, status_code=500, excerpt="it broke"
    )
    WebhookAttempt.objects.create(
        delivery=delivery, outcome="failed", status_code=500, response_excerpt="it broke"
    )

    listing = staff_client.get(DELIVERIES).content.decode()
    assert "commitment.completed" in listing and "lead@example.com" in listing
    assert staff_client.get(DELIVERIES, {"q": str(commitment.pk)}).context["cl"].result_count == 1
    assert staff_client.get(DELIVERIES, {"q": str(delivery.pk)}).context["cl"].result_count == 1

    page = staff_client.get(f"{DELIVERIES}{delivery.pk}/change/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "it broke" in html and "500" in html
    assert "commitment.completed" in html and str(commitment.pk) in html  # the frozen body
    assert 'name="_save"' not in html  # read-only
    assert "credential-in-the-path" not in html and "whsec_" not in html


def test_staff_cannot_add_change_or_delete_endpoints_or_deliveries(staff_client, assigner):
    endpoint = endpoint_for(assigner)
    delivery = delivery_row(endpoint, None)
    assert staff_client.get(f"{ENDPOINTS}add/").status_code == 403
    assert staff_client.get(f"{DELIVERIES}add/").status_code == 403
    assert staff_client.post(f"{ENDPOINTS}{endpoint.pk}/delete/").status_code == 403
    assert staff_client.post(f"{DELIVERIES}{delivery.pk}/delete/").status_code == 403
    assert staff_client.post(f"{ENDPOINTS}{endpoint.pk}/change/", {"url": "x"}).status_code == 403


def test_the_replay_action_replays_failed_deliveries_and_is_audited(
    staff_client, staff, assigner, assignee, queued, django_capture_on_commit_callbacks
):
    endpoint = endpoint_for(assigner)
    failed = delivery_row(endpoint, mapped_commitment(assigner, assignee), status="failed")
    delivered = delivery_row(endpoint, None, status="delivered", attempts=1)

    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            DELIVERIES,
            {
                "action": "replay_selected",
                helpers.ACTION_CHECKBOX_NAME: [str(failed.pk), str(delivered.pk)],
            },
            follow=True,
        )

    html = response.content.decode()
    assert "Replaying 1 delivery(ies)." in html
    assert "Only a delivery that failed for good can be replayed." in html
    failed.refresh_from_db()
    delivered.refresh_from_db()
    assert (failed.status, failed.replays) == ("pending", 1)
    assert delivered.status == "delivered"
    assert queued == [(deliver_webhook, str(failed.pk))]  # the same delivery id
    (event,) = AuditEvent.objects.filter(action="webhook_delivery_replayed")
    assert event.user == staff and event.payload["delivery"] == str(failed.pk)


def test_staff_without_the_change_permission_get_no_replay_action(client, make_user, assigner):
    from django.contrib.auth.models import Permission

    viewer = make_user("viewer@example.com", is_staff=True)
    viewer.user_permissions.add(
        Permission.objects.get(codename="view_webhookdelivery"),
        Permission.objects.get(codename="view_webhookendpoint"),
    )
    endpoint = endpoint_for(assigner)
    failed = delivery_row(endpoint, None, status="failed")
    client.force_login(viewer)

    listing = client.get(DELIVERIES)
    assert listing.status_code == 200
    assert "replay_selected" not in listing.content.decode()
    client.post(
        DELIVERIES, {"action": "replay_selected", helpers.ACTION_CHECKBOX_NAME: [str(failed.pk)]}
    )
    assert WebhookDelivery.objects.get(pk=failed.pk).status == "failed"
    assert not AuditEvent.objects.filter(action="webhook_delivery_replayed").exists()


def test_staff_see_the_events_an_endpoint_is_sent(staff_client, assigner):
    endpoint = endpoint_for(assigner, url=URL)
    services.webhook_endpoint_choose_events(endpoint=endpoint, events=["commitment.withdrawn"])
    html = staff_client.get(f"{ENDPOINTS}{endpoint.pk}/change/").content.decode()
    assert "events sent" in html.lower()
    assert (
        "commitment.activated, commitment.refused, commitment.renegotiated, "
        "commitment.completed, commitment.withdrawn" in html
    )
