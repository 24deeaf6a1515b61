"""Which transitions become webhook deliveries, to whom, and the envelope
each one freezes (docs/webhooks.md, "Events" and "The body (envelope)")."""

from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest

from audit.services import Actor
from commitments import services
from commitments.models import Commitment, OutboxEvent
from tests.harness.webhooks import dispatch_all, install_clock, mapped_active, mapped_pending
from webhooks.models import WebhookDelivery
from webhooks.services import webhook_endpoint_create, webhook_endpoint_pause

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)


def only_delivery() -> WebhookDelivery:
    [delivery] = WebhookDelivery.objects.select_related("payload").all()
    return delivery


def envelope(delivery: WebhookDelivery) -> dict:
    return json.loads(delivery.payload.body)


def test_completing_a_mapped_commitment_freezes_exactly_the_envelope(
    monkeypatch, published, endpoint, assigner, assignee, django_capture_on_commit_callbacks
):
    commitment = mapped_active(assigner, assignee)
    dispatch_all()
    WebhookDelivery.objects.all().delete()  # the activation's; this test is about completion
    install_clock(monkeypatch, T0)
    services.commitment_complete(actor=Actor.for_user(assignee), commitment_id=commitment.pk)

    with django_capture_on_commit_callbacks(execute=True):
        dispatch_all()

    delivery = only_delivery()
    assert delivery.event_name == "commitment.completed"
    assert delivery.endpoint == endpoint
    assert delivery.commitment_id == commitment.pk
    # The exact bytes: field names and order, one timestamp field, milliseconds.
    assert delivery.payload.body == (
        '{"event":"commitment.completed",'
        f'"id":"{commitment.pk}",'
        '"externalSystem":"jira","externalId":"OPS-42",'
        '"previousStatus":"Active","newStatus":"Completed",'
        '"completedAt":"2026-01-02T03:04:05.678Z",'
        f'"actor":{{"kind":"user","userId":"{assignee.pk}"}},'
        '"timestamp":"2026-01-02T03:04:05.678Z"}'
    )
    assert delivery.payload.event_timestamp == T0
    assert ("deliver_webhook", str(delivery.pk)) in published


def test_accepting_sends_activated_with_only_activated_at(
    monkeypatch, published, endpoint, assigner, assignee
):
    commitment = mapped_pending(assigner, assignee)
    dispatch_all()
    install_clock(monkeypatch, T0)
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    dispatch_all()

    body = envelope(only_delivery())
    assert body == {
        "event": "commitment.activated",
        "id": str(commitment.pk),
        "externalSystem": "jira",
        "externalId": "OPS-42",
        "previousStatus": "Pending_Handshake",
        "newStatus": "Active",
        "activatedAt": "2026-01-02T03:04:05.678Z",
        "actor": {"kind": "user", "userId": str(assignee.pk)},
        "timestamp": "2026-01-02T03:04:05.678Z",
    }


def test_declining_sends_refused(monkeypatch, published, endpoint, assigner, assignee):
    commitment = mapped_pending(assigner, assignee)
    dispatch_all()
    install_clock(monkeypatch, T0)
    services.commitment_decline(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    dispatch_all()

    body = envelope(only_delivery())
    assert body["event"] == "commitment.refused"
    assert (body["previousStatus"], body["newStatus"]) == ("Pending_Handshake", "Refused")
    assert body["refusedAt"] == body["timestamp"] == "2026-01-02T03:04:05.678Z"
    assert not {"activatedAt", "completedAt", "renegotiatedAt"} & body.keys()


def test_renegotiating_sends_renegotiated(monkeypatch, published, endpoint, assigner, assignee):
    commitment = mapped_pending(assigner, assignee)
    services.commitment_decline(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    dispatch_all()
    WebhookDelivery.objects.all().delete()
    install_clock(monkeypatch, T0)
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=commitment.pk, description="Ship it sooner"
    )
    dispatch_all()

    body = envelope(only_delivery())
    assert body["event"] == "commitment.renegotiated"
    assert (body["previousStatus"], body["newStatus"]) == ("Refused", "Pending_Handshake")
    assert body["renegotiatedAt"] == body["timestamp"] == "2026-01-02T03:04:05.678Z"
    assert body["actor"] == {"kind": "user", "userId": str(assigner.pk)}
    assert not {"activatedAt", "completedAt", "refusedAt"} & body.keys()


def test_a_sync_through_a_token_names_the_token(published, endpoint, assigner, assignee, client):
    from integrations import services as token_services
    from tests.harness.api import SYNC, post_json

    minted = token_services.api_token_mint(user=assigner, name="Tracker")
    commitment = mapped_active(assigner, assignee)
    dispatch_all()
    WebhookDelivery.objects.all().delete()

    response = post_json(
        client,
        SYNC,
        {"externalSystem": "jira", "externalId": "OPS-42", "status": "Completed"},
        token=minted.plaintext,
    )
    assert response.status_code == 200, response.content
    dispatch_all()

    body = envelope(only_delivery())
    assert body["actor"] == {
        "kind": "api_token",
        "userId": str(assigner.pk),
        "tokenId": str(minted.token.pk),
    }
    assert body["id"] == str(commitment.pk)


def test_the_creation_of_a_commitment_is_no_webhook_event(published, endpoint, assigner, assignee):
    mapped_pending(assigner, assignee)
    dispatch_all()
    assert not WebhookDelivery.objects.exists()


def test_a_same_status_sync_replay_writes_no_event(published, endpoint, assigner, assignee, client):
    from tests.harness.api import SYNC, mint, post_json

    token = mint(assigner)
    mapped_active(assigner, assignee)
    body = {"externalSystem": "jira", "externalId": "OPS-42", "status": "Completed"}
    assert post_json(client, SYNC, body, token=token).status_code == 200
    dispatch_all()
    assert WebhookDelivery.objects.filter(event_name="commitment.completed").count() == 1
    events = OutboxEvent.objects.count()

    replay = post_json(client, SYNC, body, token=token)

    assert replay.status_code == 200
    assert replay.json()["changed"] is False
    assert OutboxEvent.objects.count() == events  # no outbox row, so nothing to dispatch
    dispatch_all()
    assert WebhookDelivery.objects.filter(event_name="commitment.completed").count() == 1


def test_a_draft_edit_is_no_event(published, endpoint, assigner, assignee):
    draft = services.commitment_create_draft(
        actor=Actor.for_user(assigner), assignee=assignee, description="Draft it"
    )
    # Even a draft that carries a mapping: an edit is not a transition.
    Commitment.objects.filter(pk=draft.pk).update(external_system="jira", external_id="OPS-7")
    services.commitment_update_draft(
        actor=Actor.for_user(assigner), commitment_id=draft.pk, description="Draft it better"
    )
    dispatch_all()
    assert not WebhookDelivery.objects.exists()


def test_a_commitment_without_a_mapping_sends_nothing(published, endpoint, assigner, assignee):
    commitment = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="No tracker",
        deadline=None,
    )
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    services.commitment_complete(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    dispatch_all()
    assert not WebhookDelivery.objects.exists()


def test_a_paused_endpoint_gets_no_delivery(published, endpoint, assigner, assignee):
    webhook_endpoint_pause(endpoint=endpoint)
    mapped_active(assigner, assignee)
    dispatch_all()
    assert not WebhookDelivery.objects.exists()


def test_only_the_assigners_endpoint_for_that_system_gets_it(
    published, receiver, assigner, assignee, outsider
):
    webhook_endpoint_create(user=assigner, external_system="linear", url=receiver.url)
    webhook_endpoint_create(user=assignee, external_system="jira", url=receiver.url)
    webhook_endpoint_create(user=outsider, external_system="jira", url=receiver.url)
    mapped_active(assigner, assignee)
    dispatch_all()
    assert not WebhookDelivery.objects.exists()

    mine, _ = webhook_endpoint_create(user=assigner, external_system="jira", url=receiver.url)
    mapped_active(assigner, assignee, external_id="OPS-43")
    dispatch_all()
    assert [d.endpoint for d in WebhookDelivery.objects.all()] == [mine]


def test_dispatching_an_event_twice_makes_one_delivery(published, endpoint, assigner, assignee):
    mapped_active(assigner, assignee)
    dispatch_all()
    event = OutboxEvent.objects.get(kind="activated")
    OutboxEvent.objects.filter(pk=event.pk).update(dispatched_at=None)
    dispatch_all()
    assert WebhookDelivery.objects.filter(event=event).count() == 1
    assert isinstance(WebhookDelivery.objects.get().pk, uuid.UUID)
