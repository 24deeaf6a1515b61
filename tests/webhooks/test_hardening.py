"""Issue 16's webhook holes, each closed: one person cannot hold every
webhook worker (test sends spaced, endpoints capped, sends in flight capped
per person); the URL is a secret at rest and on the audit trail, and only a
URL that is sent exactly as stored is taken; a deactivated owner's endpoints
get nothing and are paused, and the admin says so. The real-worker proof of
the in-flight cap is in test_worker.py."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.utils import timezone

from audit.models import AuditEvent
from commitments.models import OutboxEvent
from relay import outbox
from tests.harness.api import form_key_in, sign_in
from tests.harness.webhook_pages import (
    RECEIVER,
    delivery_row,
    endpoint_for,
    mapped_commitment,
    resolve_every_name_to,
)
from tests.harness.webhooks import Receiver
from webhooks import sending, services, turns
from webhooks.errors import WebhookEndpointLimit, WebhookTestTooSoon, WebhookUrlRefused
from webhooks.models import (
    OWNER_INACTIVE_REASON,
    WebhookDelivery,
    WebhookDeliveryStatus,
    WebhookEndpoint,
)
from webhooks.payloads import CONTRACT_EVENTS

PAGE = "/settings/webhooks/"
SECRET_URL = "https://hooks.example.com/hook/credential-in-the-path?key=also-secret"

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _production_network(settings, monkeypatch):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    resolve_every_name_to(monkeypatch)


@pytest.fixture
def owner(client, assigner):
    sign_in(client, assigner)
    return client


def form_key(client) -> str:
    html = client.get(PAGE).content.decode()
    return form_key_in(html)


def register(client, system="jira", url=RECEIVER):
    return client.post(PAGE, {"external_system": system, "url": url, "form_key": form_key(client)})


# --- point 3: one person's share ------------------------------------------------------------


def test_thirty_test_posts_make_one_test_delivery(owner, assigner, queued):
    endpoint = endpoint_for(assigner)

    responses = [owner.post(f"{PAGE}{endpoint.pk}/test") for _ in range(30)]

    assert all(r.status_code == 302 for r in responses)
    assert WebhookDelivery.objects.filter(endpoint=endpoint, is_test=True).count() == 1
    page = owner.get(PAGE).content.decode()
    assert "You sent a test a moment ago. Try again in" in page


def test_test_sends_are_spaced_per_person_across_endpoints_not_per_endpoint(
    assigner, make_user, queued
):
    jira, linear = endpoint_for(assigner), endpoint_for(assigner, system="linear")
    services.webhook_test_send(endpoint=jira)

    with pytest.raises(WebhookTestTooSoon) as refused:
        services.webhook_test_send(endpoint=linear)
    assert 1 <= refused.value.retry_after <= 10

    # Someone else's test is not held up by it.
    other = endpoint_for(make_user("other@example.com"))
    services.webhook_test_send(endpoint=other)
    assert WebhookDelivery.objects.filter(is_test=True).count() == 2


def test_a_person_has_at_most_the_configured_number_of_endpoints(
    owner, assigner, make_user, settings
):
    settings.WEBHOOK_MAX_ENDPOINTS = 3
    for system in ("a", "b", "c"):
        endpoint_for(assigner, system=system)

    with pytest.raises(WebhookEndpointLimit):
        services.webhook_endpoint_create(user=assigner, external_system="d", url=RECEIVER)
    response = register(owner, system="d")

    assert response.status_code == 400
    assert "3 endpoints, the most one person may have" in response.content.decode()
    assert WebhookEndpoint.objects.filter(user=assigner).count() == 3
    # The cap is per person.
    endpoint_for(make_user("other@example.com"), system="d")


def test_the_default_caps_are_twenty_endpoints_and_two_sends_in_flight():
    from django.conf import settings

    assert (settings.WEBHOOK_MAX_ENDPOINTS, settings.WEBHOOK_USER_IN_FLIGHT) == (20, 2)


def _in_flight(delivery: WebhookDelivery) -> None:
    """The delivery as a worker leaves it mid-send: claimed, lease live."""
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=WebhookDeliveryStatus.SENDING,
        attempts=1,
        claimed_until=timezone.now() + dt.timedelta(minutes=2),
    )


def test_a_person_with_as_many_sends_in_flight_as_allowed_waits_and_others_do_not(
    assigner, assignee, make_user, settings, queued
):
    settings.WEBHOOK_USER_IN_FLIGHT = 2
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with Receiver() as receiver:
        hogged = [endpoint_for(assigner, system=s, url=receiver.url) for s in ("a", "b", "c")]
        for endpoint in hogged[:2]:
            _in_flight(delivery_row(endpoint, None))
        waiting = delivery_row(hogged[2], None)
        other = delivery_row(endpoint_for(make_user("o@example.com"), url=receiver.url), None)

        assert sending.webhook_send(delivery_id=waiting.pk) is None  # its owner's turn is over
        assert sending.webhook_send(delivery_id=other.pk) == "delivered"

        waiting.refresh_from_db()
        assert waiting.status == WebhookDeliveryStatus.PENDING and waiting.attempts == 0
        assert waiting.attempt_log.count() == 0
        assert len(receiver.hits) == 1

        # One of the two sends ends: the one that waited is queued at once.
        finished = WebhookDelivery.objects.filter(endpoint=hogged[0]).get()
        WebhookDelivery.objects.filter(pk=finished.pk).update(
            status=WebhookDeliveryStatus.DELIVERED, claimed_until=None
        )
        turns.next_in_line(assigner.pk, now=timezone.now())
        assert sending.webhook_send(delivery_id=waiting.pk) == "delivered"


def test_a_send_a_dead_worker_left_is_next_in_line_before_newer_ones(assigner, settings, queued):
    """A delivery left `sending` by a worker that died (killed, or the
    database gone before the outcome was written) is taken again when a send
    to its endpoint ends, once its lease ran out, before newer deliveries:
    not only when a sweep happens to find the endpoint idle."""
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with Receiver() as receiver:
        endpoint = endpoint_for(assigner, url=receiver.url)
        abandoned = delivery_row(endpoint, None)
        newer = delivery_row(endpoint, None)
        WebhookDelivery.objects.filter(pk=abandoned.pk).update(
            status=WebhookDeliveryStatus.SENDING,
            attempts=1,
            claimed_until=timezone.now() - dt.timedelta(seconds=1),
        )
        abandoned.attempt_log.create(started_at=timezone.now() - dt.timedelta(minutes=3))

        turns.next_in_line(assigner.pk, now=timezone.now())

        # The endpoint's line, as one batch, the abandoned one first.
        abandoned.refresh_from_db()
        newer.refresh_from_db()
        assert abandoned.enqueued_at is not None and newer.enqueued_at is not None
        line = [str(newer.pk), str(abandoned.pk)]
        assert sending.webhooks_send(delivery_ids=line) == {"delivered": 2}
        sent = [hit.headers["X-Service-Delivery"] for hit in receiver.hits]
        assert sent == [str(abandoned.pk), str(newer.pk)]
        abandoned.refresh_from_db()
        assert abandoned.status == WebhookDeliveryStatus.DELIVERED and abandoned.attempts == 2
        outcomes = sorted(abandoned.attempt_log.values_list("outcome", flat=True))
        assert outcomes == ["delivered", "interrupted"]


# --- point 4: the URL is a secret --------------------------------------------------------------


def raw_url(endpoint: WebhookEndpoint) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT url FROM webhooks_webhookendpoint WHERE id = %s", [endpoint.pk.hex])
        row = cursor.fetchone()
    if row is None:  # PostgreSQL keeps the UUID as a uuid
        with connection.cursor() as cursor:
            cursor.execute("SELECT url FROM webhooks_webhookendpoint WHERE id = %s", [endpoint.pk])
            row = cursor.fetchone()
    return row[0]


def test_the_url_is_stored_encrypted(assigner):
    endpoint = endpoint_for(assigner, url=SECRET_URL)

    stored = raw_url(endpoint)

    assert "credential-in-the-path" not in stored and "hooks.example.com" not in stored
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).url == SECRET_URL


def test_the_audit_trail_has_scheme_and_host_and_that_it_changed_never_the_url(assigner):
    endpoint = endpoint_for(assigner, url=SECRET_URL)
    services.webhook_endpoint_update(endpoint=endpoint, url=SECRET_URL.replace("hook/", "v2/"))
    services.webhook_endpoint_update(endpoint=endpoint, url=endpoint.url)
    services.webhook_endpoint_delete(endpoint=endpoint)

    events = AuditEvent.objects.filter(action__startswith="webhook_endpoint_").order_by(
        "occurred_at"
    )
    trail = [(e.action, e.payload) for e in events]
    assert "credential-in-the-path" not in str(trail) and "also-secret" not in str(trail)
    masked = "https://hooks.example.com/…"
    assert trail == [
        (
            "webhook_endpoint_created",
            {"externalSystem": "jira", "url": masked, "events": list(CONTRACT_EVENTS)},
        ),
        ("webhook_endpoint_changed", {"url": {"old": masked, "new": masked}, "changed": True}),
        ("webhook_endpoint_changed", {"url": {"old": masked, "new": masked}, "changed": False}),
        ("webhook_endpoint_deleted", {"externalSystem": "jira", "url": masked}),
    ]


@pytest.mark.parametrize(
    "url",
    [
        "https://user:pw@hooks.example.com/x",
        "https://token@hooks.example.com/x",
        "https://hooks.example.com/a b",
        "https://hooks.example.com/x\ty",
        "https://hooks.example.com/x\r\nX-Injected: 1",
        "https://hooks.example.com/x\x00",
        "https://hooks.example.com/x\u2028y",
    ],
)
def test_a_url_with_credentials_whitespace_or_control_characters_is_refused(owner, assigner, url):
    with pytest.raises(WebhookUrlRefused):
        services.webhook_url_check(url)

    response = register(owner, url=url)

    assert response.status_code == 400
    assert response.context["form"].errors["url"]
    assert not WebhookEndpoint.objects.exists()


def test_the_url_is_stored_exactly_as_it_is_requested(assigner, settings, queued):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with Receiver() as receiver:
        port = receiver.server.server_port
        written = f"http://127.0.0.1:{port}/Hooks/caf\u00e9?q=\u00fc#fragment"

        endpoint = endpoint_for(assigner, url=written)
        delivery = delivery_row(endpoint, None)
        assert sending.webhook_send(delivery_id=delivery.pk) == "delivered"

    endpoint.refresh_from_db()
    assert endpoint.url == f"http://127.0.0.1:{port}/Hooks/caf%C3%A9?q=%C3%BC"
    [hit] = receiver.hits
    assert hit.path == "/Hooks/caf%C3%A9?q=%C3%BC"


# --- point 10: deactivated owners ------------------------------------------------------------


def test_an_event_of_a_deactivated_owner_sends_nothing_and_pauses_the_endpoint(
    assigner, assignee, queued
):
    endpoint = endpoint_for(assigner)
    commitment = mapped_commitment(assigner, assignee)
    type(assigner).objects.filter(pk=assigner.pk).update(is_active=False)
    event = OutboxEvent.objects.create(
        commitment=commitment,
        kind="completed",
        previous_status="Active",
        new_status="Completed",
        actor_kind="system",
        occurred_at=timezone.now(),
    )

    outbox.outbox_event_dispatch(event_id=event.pk)

    assert not WebhookDelivery.objects.filter(endpoint=endpoint).exists()
    endpoint.refresh_from_db()
    assert endpoint.is_paused and endpoint.paused_reason == OWNER_INACTIVE_REASON
    paused = AuditEvent.objects.get(action="webhook_endpoint_paused")
    assert paused.payload == {"reason": OWNER_INACTIVE_REASON}


def test_a_waiting_delivery_of_a_deactivated_owner_is_not_sent(assigner, settings, queued):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with Receiver() as receiver:
        endpoint = endpoint_for(assigner, url=receiver.url)
        delivery = delivery_row(endpoint, None)
        type(assigner).objects.filter(pk=assigner.pk).update(is_active=False)

        assert sending.webhook_send(delivery_id=delivery.pk) is None

    assert receiver.hits == []
    delivery.refresh_from_db()
    endpoint.refresh_from_db()
    assert delivery.status == WebhookDeliveryStatus.FAILED
    assert delivery.last_error == OWNER_INACTIVE_REASON
    assert endpoint.paused_reason == OWNER_INACTIVE_REASON


def test_the_admin_says_when_an_endpoint_s_owner_is_deactivated(staff_client, assigner):
    endpoint = endpoint_for(assigner, url=SECRET_URL)
    type(assigner).objects.filter(pk=assigner.pk).update(is_active=False)

    listing = staff_client.get("/admin/webhooks/webhookendpoint/?user__is_active__exact=0")
    change = staff_client.get(f"/admin/webhooks/webhookendpoint/{endpoint.pk}/change/")

    assert listing.status_code == change.status_code == 200
    assert "owner active" in listing.content.decode().lower()
    assert str(endpoint.external_system) in listing.content.decode()
    assert "deactivated: nothing is sent to it" in change.content.decode()


# --- issue 15, point 10: a test's result when it arrives ------------------------------------


def status_url(delivery) -> str:
    return f"{PAGE}deliveries/{delivery.pk}/status"


def test_the_status_of_a_test_says_sending_then_delivered_with_the_code(
    owner, assigner, settings, queued, django_assert_num_queries
):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with Receiver() as receiver:
        endpoint = endpoint_for(assigner, url=receiver.url)
        owner.post(f"{PAGE}{endpoint.pk}/test")
        delivery = WebhookDelivery.objects.get(endpoint=endpoint)
        owner.get(status_url(delivery))  # the session settles

        with django_assert_num_queries(3):  # session, user, delivery
            before = owner.get(status_url(delivery))
        sending.webhook_send(delivery_id=delivery.pk)
        after = owner.get(status_url(delivery))

    assert before.status_code == 200 and before["Content-Type"] == "application/json"
    assert "no-store" in before["Cache-Control"]
    assert before.json() == {
        "id": str(delivery.pk),
        "status": "pending",
        "done": False,
        "statusCode": None,
        "text": "Sending…",
    }
    assert after.json()["done"] is True and after.json()["statusCode"] == 200
    assert after.json()["text"] == "Delivered: your receiver answered 200."


def test_the_status_of_a_failed_test_gives_the_reason(owner, assigner, settings, queued):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    from tests.harness.services import Reply

    with Receiver(default=Reply(500, "down")) as receiver:
        endpoint = endpoint_for(assigner, url=receiver.url)
        delivery = delivery_row(endpoint, None, event_name="commitment.test")
        sending.webhook_send(delivery_id=delivery.pk)

    state = owner.get(status_url(delivery)).json()
    assert state["status"] == "failed" and state["done"] is True
    assert state["text"] == "Failed: The receiver answered 500."


def test_the_status_is_the_owner_s_only_and_answers_json_when_refused(
    client, owner, assigner, outsider
):
    delivery = delivery_row(endpoint_for(assigner), None, event_name="commitment.test")
    stranger = type(client)()
    sign_in(stranger, outsider)

    assert owner.get(status_url(delivery)).status_code == 200
    refused = stranger.get(status_url(delivery))
    assert refused.status_code == 404 and refused.json()["error"] == "not_found"
    signed_out = type(client)().get(status_url(delivery))
    assert signed_out.status_code == 401 and signed_out.json()["error"] == "unauthorized"


def test_the_page_shows_the_last_test_with_what_the_script_polls_and_works_without_it(
    owner, assigner, queued
):
    endpoint = endpoint_for(assigner)
    response = owner.post(f"{PAGE}{endpoint.pk}/test", follow=True)
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)

    page = response.content.decode()
    assert "Reload this page in a moment" not in page
    assert "Its result shows under the endpoint when it arrives." in page
    assert f'data-test-status="{status_url(delivery)}"' in page
    assert 'data-done="false"' in page
    assert '<script src="/static/js/webhooks.js" defer></script>' in page
    assert "<noscript>Reload this page to see its result.</noscript>" in page

    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=WebhookDeliveryStatus.DELIVERED, last_status_code=204
    )
    later = owner.get(PAGE).content.decode()
    assert 'data-done="true"' in later
    assert "Delivered: your receiver answered 204." in later
    assert "<noscript>" not in later
