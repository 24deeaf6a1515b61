"""Settings, Webhooks: register an endpoint (its secret shown once), edit,
pause, resume, delete it, send a test event, rotate its secret, and see its
deliveries, replaying the ones that failed for good. Three people: the
owner, and an outsider who must be refused everything of theirs."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.models import AuditEvent
from tests.harness.api import PASSWORD, form_key_in, sign_in
from tests.harness.csp import assert_strict, inline_code
from tests.harness.services import FakeService, Reply
from tests.harness.webhook_pages import (
    RECEIVER,
    delivery_row,
    endpoint_for,
    mapped_commitment,
    resolve_every_name_to,
)
from webhooks import sending, services
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.payloads import CONTRACT_EVENTS, OPTIONAL_EVENTS
from webhooks.tasks import deliver_webhook

PAGE = "/settings/webhooks/"
SECRET = re.compile(r"whsec_[A-Za-z0-9+/]{43}=")

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _production_network(settings, monkeypatch):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    resolve_every_name_to(monkeypatch)


@pytest.fixture
def owner(client, assigner):
    sign_in(client, assigner)  # a fresh sign-in, as showing a secret needs
    return client


def form_key(client) -> str:
    html = client.get(PAGE).content.decode()
    return form_key_in(html)


def register(client, system="jira", url=RECEIVER):
    return client.post(PAGE, {"external_system": system, "url": url, "form_key": form_key(client)})


def rotate(client, endpoint):
    page = client.get(f"{PAGE}{endpoint.pk}/rotate").content.decode()
    key = form_key_in(page)
    return client.post(f"{PAGE}{endpoint.pk}/rotate", {"form_key": key})


# --- registration ----------------------------------------------------------------------


def test_the_page_needs_a_signed_in_user(client):
    response = client.get(PAGE)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_settings_page_links_to_it(owner):
    assert f'href="{PAGE}"' in owner.get("/settings/").content.decode()


def test_registering_shows_the_secret_once_then_never_again(owner, assigner):
    response = register(owner)
    assert response.status_code == 302 and response["Location"] == PAGE

    shown = owner.get(PAGE)
    (secret,) = SECRET.findall(shown.content.decode())
    assert "no-store" in shown["Cache-Control"]
    endpoint = WebhookEndpoint.objects.get(user=assigner)
    assert (endpoint.external_system, endpoint.url, endpoint.secret) == ("jira", RECEIVER, secret)

    again = owner.get(PAGE).content.decode()
    assert not SECRET.search(again)
    # The URL is a secret too: the list names its host, the edit form shows it.
    assert "jira" in again and "https://hooks.example.com/…" in again
    assert RECEIVER not in again


def test_the_secret_is_stored_encrypted(owner, assigner):
    register(owner)
    (secret,) = SECRET.findall(owner.get(PAGE).content.decode())
    with connection.cursor() as cursor:
        cursor.execute("SELECT secret FROM webhooks_webhookendpoint")
        (stored,) = cursor.fetchone()
    assert secret not in stored and "whsec_" not in stored


def test_one_endpoint_per_external_system(owner, assigner):
    register(owner)
    response = register(owner, url="https://other.example.com/hook")

    assert response.status_code == 400
    assert response.context["form"].errors["external_system"] == [
        "You already have an endpoint for jira."
    ]
    assert WebhookEndpoint.objects.filter(user=assigner).count() == 1
    assert register(owner, system="linear").status_code == 302
    assert WebhookEndpoint.objects.filter(user=assigner).count() == 2


def test_a_form_sent_twice_registers_once(owner, assigner):
    key = form_key(owner)
    data = {"external_system": "jira", "url": RECEIVER, "form_key": key}
    assert owner.post(PAGE, data).status_code == 302
    owner.get(PAGE)  # the secret, shown once
    assert owner.post(PAGE, data).status_code == 302
    assert not SECRET.search(owner.get(PAGE).content.decode())
    assert WebhookEndpoint.objects.filter(user=assigner).count() == 1


def test_a_refused_url_is_a_form_error_and_registers_nothing(owner, assigner):
    response = register(owner, url="http://hooks.example.com/x")

    assert response.status_code == 400
    assert response.context["form"].errors["url"] == ["The URL must start with https://."]
    assert "The URL must start with https://." in response.content.decode()
    assert not WebhookEndpoint.objects.exists()
    # The refused form keeps what was typed and can be sent again at once.
    assert register(owner).status_code == 302


def test_registering_needs_the_csrf_token(assigner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(assigner)
    response = client.post(PAGE, {"external_system": "jira", "url": RECEIVER, "form_key": "x"})
    assert response.status_code == 403
    assert not WebhookEndpoint.objects.exists()


def test_an_old_sign_in_gives_the_password_again_before_a_secret_is_made_or_a_url_changed(
    client, assigner
):
    client.force_login(assigner)  # no sign-in recorded: as old as can be
    endpoint = endpoint_for(assigner, system="linear")

    rotating = client.post(f"{PAGE}{endpoint.pk}/rotate", {"form_key": "x"})
    assert rotating["Location"].startswith("/accounts/reauthenticate/")
    moving = client.post(f"{PAGE}{endpoint.pk}/edit", {"url": "https://elsewhere.example.com/"})
    assert moving["Location"].startswith("/accounts/reauthenticate/")
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).url == RECEIVER
    asked = client.post(PAGE, {"external_system": "jira", "url": RECEIVER, "form_key": "x"})
    assert asked["Location"].startswith("/accounts/reauthenticate/")
    assert not WebhookEndpoint.objects.filter(external_system="jira").exists()
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).previous_secret == ""
    # The page itself asks before showing the form.
    assert client.get(PAGE)["Location"] == asked["Location"]

    # The password leads back to the form; the refused POST is not replayed.
    back = client.post(asked["Location"], {"password": PASSWORD})
    assert (back.status_code, back["Location"]) == (302, PAGE)
    assert not WebhookEndpoint.objects.filter(external_system="jira").exists()
    assert register(client).status_code == 302
    assert WebhookEndpoint.objects.filter(external_system="jira").exists()
    assert SECRET.search(client.get(PAGE).content.decode())


# --- edit, pause, resume, delete -----------------------------------------------------------


def test_the_url_can_be_changed_and_is_checked_again(owner, assigner):
    endpoint = endpoint_for(assigner)

    refused = owner.post(f"{PAGE}{endpoint.pk}/edit", {"url": "https://10.0.0.1/x"})
    assert refused.status_code == 400
    assert refused.context["form"].errors["url"] == ["The URL points to a private address."]

    saved = owner.post(f"{PAGE}{endpoint.pk}/edit", {"url": "https://new.example.com/hook"})
    assert saved.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.url == "https://new.example.com/hook"


def test_pausing_and_resuming(owner, assigner):
    endpoint = endpoint_for(assigner)

    assert owner.post(f"{PAGE}{endpoint.pk}/pause").status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.is_paused
    page = owner.get(PAGE).content.decode()
    assert "Paused" in page and "Paused by you." in page and "Resume</button>" in page

    assert owner.post(f"{PAGE}{endpoint.pk}/resume").status_code == 302
    endpoint.refresh_from_db()
    assert not endpoint.is_paused
    assert "Pause</button>" in owner.get(PAGE).content.decode()


def test_pause_and_resume_are_posts_only(owner, assigner):
    endpoint = endpoint_for(assigner)
    assert owner.get(f"{PAGE}{endpoint.pk}/pause").status_code == 405
    assert owner.get(f"{PAGE}{endpoint.pk}/resume").status_code == 405


def test_deleting_asks_first_naming_the_endpoint(owner, assigner):
    endpoint = endpoint_for(assigner)

    confirm = owner.get(f"{PAGE}{endpoint.pk}/delete").content.decode()
    assert "Delete the jira endpoint?" in confirm and "https://hooks.example.com/…" in confirm
    assert RECEIVER not in confirm
    assert WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()

    assert owner.post(f"{PAGE}{endpoint.pk}/delete").status_code == 302
    assert not WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()
    assert AuditEvent.objects.filter(action="webhook_endpoint_deleted").exists()


def test_an_endpoint_paused_by_410_gone_says_so_on_the_page(
    owner, assigner, assignee, settings, queued
):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with FakeService() as receiver:
        receiver.reply_with(Reply(410, "this hook was removed"))
        endpoint = endpoint_for(assigner, url=receiver.url)
        delivery = delivery_row(endpoint, mapped_commitment(assigner, assignee))
        sending.webhook_send(delivery_id=delivery.pk)

    endpoint.refresh_from_db()
    assert endpoint.is_paused
    page = owner.get(PAGE).content.decode()
    assert "Paused" in page
    assert "The receiver answered 410 Gone" in page
    assert "this hook was removed" in page  # the answer's excerpt, on the delivery


# --- test event, rotation ---------------------------------------------------------------


def test_send_test_event_queues_a_marked_commitment_test(
    owner, assigner, queued, django_capture_on_commit_callbacks
):
    endpoint = endpoint_for(assigner)

    with django_capture_on_commit_callbacks(execute=True):
        response = owner.post(f"{PAGE}{endpoint.pk}/test")

    assert response.status_code == 302
    (delivery,) = WebhookDelivery.objects.filter(endpoint=endpoint)
    assert (delivery.event_name, delivery.is_test) == ("commitment.test", True)
    assert queued == [(deliver_webhook, str(delivery.pk))]
    page = owner.get(PAGE).content.decode()
    assert "Test event (commitment.test) queued" in page
    assert "commitment.test" in page and ">Test</span>" in page


def test_rotating_shows_the_new_secret_once_and_both_sign_for_24_hours(owner, assigner):
    endpoint = endpoint_for(assigner)
    old = endpoint.secret

    confirm = owner.get(f"{PAGE}{endpoint.pk}/rotate").content.decode()
    assert "24 hours" in confirm and "Rotate secret</button>" in confirm
    assert rotate(owner, endpoint).status_code == 302

    page = owner.get(PAGE)
    (new,) = SECRET.findall(page.content.decode())
    assert "no-store" in page["Cache-Control"]
    assert "both the old and the new secret sign every delivery" in page.content.decode()
    assert "24 hours" in page.content.decode()
    endpoint.refresh_from_db()
    assert new != old
    assert endpoint.signing_secrets(timezone.now()) == [new, old]
    assert endpoint.signing_secrets(timezone.now() + dt.timedelta(hours=24, seconds=1)) == [new]
    assert not SECRET.search(owner.get(PAGE).content.decode())


def test_a_rotation_sent_twice_rotates_once(owner, assigner):
    """A second rotation would end the first one's 24 hours at once."""
    endpoint = endpoint_for(assigner)
    old = endpoint.secret
    page = owner.get(f"{PAGE}{endpoint.pk}/rotate").content.decode()
    data = {"form_key": form_key_in(page)}

    owner.post(f"{PAGE}{endpoint.pk}/rotate", data)
    owner.post(f"{PAGE}{endpoint.pk}/rotate", data)

    endpoint.refresh_from_db()
    assert endpoint.previous_secret == old


# --- deliveries on the page ----------------------------------------------------------------


def test_recent_deliveries_are_listed_with_what_happened(owner, assigner, assignee):
    endpoint = endpoint_for(assigner)
    commitment = mapped_commitment(assigner, assignee, external_id="OPS-77")
    due = timezone.now() + dt.timedelta(minutes=5)
    delivery_row(
        endpoint,
        commitment,
        attempts=2,
        status_code=503,
        excerpt="upstream down, try later",
        error="The receiver answered 503.",
        next_attempt_at=due,
    )

    page = owner.get(PAGE).content.decode()

    assert "commitment.completed" in page
    assert "OPS-77" in page and f"/commitments/{commitment.pk}" in page
    assert "Pending" in page
    assert "<td>2</td>" in page  # attempts
    assert "<code>503</code>" in page and "upstream down, try later" in page
    assert timezone.localtime(due).strftime("%H:%M:%S") in page  # next attempt


def test_a_permanently_failed_delivery_has_a_replay_button_that_keeps_its_id(
    owner, assigner, assignee, queued, django_capture_on_commit_callbacks
):
    endpoint = endpoint_for(assigner)
    failed = delivery_row(
        endpoint,
        mapped_commitment(assigner, assignee),
        status="failed",
        attempts=8,
        status_code=500,
        excerpt="boom",
    )
    delivered = delivery_row(endpoint, None, status="delivered", attempts=1, status_code=200)

    page = owner.get(PAGE).content.decode()
    assert "Failed for good" in page
    assert f'action="/settings/webhooks/deliveries/{failed.pk}/replay"' in page
    assert f"deliveries/{delivered.pk}/replay" not in page

    with django_capture_on_commit_callbacks(execute=True):
        assert owner.post(f"{PAGE}deliveries/{failed.pk}/replay").status_code == 302
    failed.refresh_from_db()
    assert failed.status == "pending" and failed.replays == 1
    assert queued == [(deliver_webhook, str(failed.pk))]  # the same delivery id
    replayed = AuditEvent.objects.get(action="webhook_delivery_replayed")
    assert replayed.user == assigner


def test_replaying_a_delivery_that_did_not_fail_is_refused_with_a_message(owner, assigner):
    endpoint = endpoint_for(assigner)
    delivered = delivery_row(endpoint, None, status="delivered", attempts=1, status_code=200)

    response = owner.post(f"{PAGE}deliveries/{delivered.pk}/replay", follow=True)

    assert "Only a delivery that failed for good can be replayed." in response.content.decode()
    delivered.refresh_from_db()
    assert delivered.status == "delivered"


def test_the_page_costs_the_same_queries_however_many_endpoints_and_deliveries(
    owner, assigner, assignee, django_assert_num_queries
):
    first = endpoint_for(assigner)
    delivery_row(first, mapped_commitment(assigner, assignee), status="failed", attempts=8)
    owner.get(PAGE)  # the session settles
    with CaptureQueriesContext(connection) as one_endpoint:
        assert owner.get(PAGE).status_code == 200

    for system in ("linear", "github", "gitlab"):
        endpoint = endpoint_for(assigner, system=system)
        for n in range(4):
            c = mapped_commitment(assigner, assignee, system=system, external_id=f"{system}-{n}")
            delivery_row(endpoint, c, status="failed" if n % 2 else "delivered", attempts=n + 1)
    with django_assert_num_queries(len(one_endpoint.captured_queries)):
        page = owner.get(PAGE).content.decode()

    assert page.count("Replay</button>") == 1 + 3 * 2
    assert page.count("commitment.completed") == 2 * (1 + 3 * 2) + 3 * 2  # recent + failed


def test_the_page_with_everything_on_it_holds_to_the_content_security_policy(
    owner, assigner, assignee
):
    endpoint = endpoint_for(assigner)
    delivery_row(endpoint, mapped_commitment(assigner, assignee), status="failed", attempts=8)
    delivery_row(endpoint, None, event_name="commitment.test", status="delivered", attempts=1)
    paused = endpoint_for(assigner, system="linear")
    owner.post(f"{PAGE}{paused.pk}/pause")
    register(owner, system="github")  # the secret, shown once
    rotate(owner, endpoint)

    pages = [
        owner.get(PAGE),
        owner.get(f"{PAGE}{endpoint.pk}/edit"),
        owner.get(f"{PAGE}{endpoint.pk}/delete"),
        owner.get(f"{PAGE}{endpoint.pk}/rotate"),
        owner.post(PAGE, {"external_system": "jira", "url": "http://x.example.com/"}),
    ]
    for response in pages:
        assert response.status_code in (200, 400)
        assert_strict(response)
        assert inline_code(response.content.decode()) == []


# --- someone else's ----------------------------------------------------------------------


def test_an_outsider_can_neither_see_nor_touch_an_endpoint(
    client, assigner, assignee, outsider, queued
):
    endpoint = endpoint_for(assigner)
    failed = delivery_row(endpoint, mapped_commitment(assigner, assignee), status="failed")
    sign_in(client, outsider)

    assert RECEIVER not in client.get(PAGE).content.decode()
    for path in ("edit", "delete", "rotate"):
        assert client.get(f"{PAGE}{endpoint.pk}/{path}").status_code == 404
    for path in ("edit", "pause", "resume", "delete", "test", "rotate"):
        assert client.post(f"{PAGE}{endpoint.pk}/{path}", {"url": RECEIVER}).status_code == 404
    assert client.post(f"{PAGE}deliveries/{failed.pk}/replay").status_code == 404

    endpoint.refresh_from_db()
    failed.refresh_from_db()
    assert (endpoint.url, endpoint.is_paused, failed.status) == (RECEIVER, False, "failed")
    assert queued == []


# --- the receiver documentation ----------------------------------------------------------


def test_the_page_links_to_the_receiver_documentation_which_anyone_can_read(owner, client):
    assert 'href="/settings/webhooks/docs.md"' in owner.get(PAGE).content.decode()
    client.logout()
    docs = client.get(f"{PAGE}docs.md")
    assert docs.status_code == 200
    assert docs["Content-Type"] == "text/plain; charset=utf-8"
    assert docs.content.decode().startswith("# Outbound webhooks: for receivers")


# --- the events an endpoint chooses (issue 26, point 7) ------------------------------------


def test_each_endpoint_offers_the_new_events_as_checkboxes_the_four_always_sent(owner, assigner):
    jira = endpoint_for(assigner)
    linear = endpoint_for(assigner, system="linear")
    services.webhook_endpoint_choose_events(endpoint=linear, events=["commitment.withdrawn"])

    page = owner.get(PAGE).content.decode()

    assert page.count('type="checkbox" name="events"') == 3 * len(OPTIONAL_EVENTS)  # + create form
    for endpoint in (jira, linear):
        assert f'action="{PAGE}{endpoint.pk}/events"' in page
        assert f'id="events-{endpoint.pk}-events_0"' in page  # ids of its own
    checked = re.findall(r'<input type="checkbox" name="events" value="([^"]+)"[^>]*checked', page)
    assert checked == ["commitment.withdrawn"]
    assert "Sends the four status events and <code>commitment.withdrawn</code>." in page
    assert "Sends the four status events." in page  # jira: nothing chosen


def test_choosing_events_on_the_page_saves_them(owner, assigner):
    endpoint = endpoint_for(assigner)

    response = owner.post(
        f"{PAGE}{endpoint.pk}/events",
        {"events": ["commitment.commented", "commitment.proposed"]},
    )

    assert response.status_code == 302
    assert response["Location"] == f"{PAGE}#endpoint-{endpoint.pk}"
    endpoint.refresh_from_db()
    assert endpoint.chosen_events == ["commitment.proposed", "commitment.commented"]
    page = owner.get(PAGE).content.decode()
    assert (
        "Saved the events of the jira endpoint: the four status events, and "
        "commitment.proposed, commitment.commented." in page
    )

    # None ticked: back to the four.
    assert owner.post(f"{PAGE}{endpoint.pk}/events", {}).status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.events == list(CONTRACT_EVENTS)


def test_an_event_not_offered_is_refused_with_the_form_open_and_nothing_changed(owner, assigner):
    endpoint = endpoint_for(assigner)

    response = owner.post(
        f"{PAGE}{endpoint.pk}/events", {"events": ["commitment.proposed", "commitment.nope"]}
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert "Choose among the events listed." in html
    assert '<details class="endpoint-events" open>' in html
    endpoint.refresh_from_db()
    assert endpoint.events == list(CONTRACT_EVENTS)
    assert owner.get(f"{PAGE}{endpoint.pk}/events").status_code == 405


def test_registering_with_events_ticked_chooses_them(owner, assigner):
    key = form_key(owner)
    data = {
        "external_system": "jira",
        "url": RECEIVER,
        "form_key": key,
        "events": ["commitment.reassigned"],
    }
    assert owner.post(PAGE, data).status_code == 302
    endpoint = WebhookEndpoint.objects.get(user=assigner)
    assert endpoint.events == [*CONTRACT_EVENTS, "commitment.reassigned"]


def test_an_outsider_cannot_choose_another_person_s_events(client, assigner, outsider):
    endpoint = endpoint_for(assigner)
    sign_in(client, outsider)
    response = client.post(f"{PAGE}{endpoint.pk}/events", {"events": ["commitment.commented"]})
    assert response.status_code == 404
    endpoint.refresh_from_db()
    assert endpoint.events == list(CONTRACT_EVENTS)
