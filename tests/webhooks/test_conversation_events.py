"""The conversation's events (issue 26, point 7; docs/webhooks.md, "Choosing
events"): the four contract events exactly as they were, byte for byte,
whatever an endpoint chose; the eight new ones only to an endpoint that
chose them, in the same envelope (a proposal's id and deadline added,
never a person's words); endpoints from before the choice get the four."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable

import pytest

from audit.models import AuditEvent
from audit.services import Actor
from commitments import services
from commitments.models import Commitment, OutboxEvent, Proposal
from tests.harness.webhooks import dispatch_all, install_clock, mapped_active, mapped_pending
from webhooks import payloads
from webhooks.errors import WebhookError
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import (
    webhook_endpoint_choose_events,
    webhook_endpoint_create,
    webhook_test_send,
)

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)
LATER = dt.datetime(2030, 3, 8, 17, 0, tzinfo=dt.UTC)
EVERY_OPTIONAL = list(payloads.OPTIONAL_EVENTS)
COMMENT = "Between us: the vendor is late again, do not tell the client"
NOTE = "My private reason for asking"


def exact(commitment, event, field, previous, new, actor) -> str:
    """The contract's envelope as bytes (docs/webhooks.md), at T0."""
    return (
        f'{{"event":"{event}",'
        f'"id":"{commitment.pk}",'
        '"externalSystem":"jira","externalId":"OPS-42",'
        f'"previousStatus":"{previous}","newStatus":"{new}",'
        f'"{field}":"2026-01-02T03:04:05.678Z",'
        f'"actor":{{"kind":"user","userId":"{actor.pk}"}},'
        '"timestamp":"2026-01-02T03:04:05.678Z"}'
    )


def bodies(event_name: str) -> list[str]:
    return [
        d.payload.body
        for d in WebhookDelivery.objects.filter(event_name=event_name).select_related("payload")
    ]


# --- the moves, each leading to one new event --------------------------------------------


def propose(assigner, assignee, external_id: str = "OPS-42") -> Commitment:
    c = mapped_pending(assigner, assignee, external_id=external_id)
    services.commitment_propose(
        actor=Actor.for_user(assignee),
        commitment_id=c.pk,
        terms_version=c.terms_version,
        deadline=LATER,
        note=NOTE,
    )
    return c


def _open_proposal(c: Commitment) -> Proposal:
    return Proposal.objects.get(commitment=c, state="open")


def decline_proposal(assigner, assignee, external_id: str = "OPS-42") -> Commitment:
    c = propose(assigner, assignee, external_id)
    services.commitment_proposal_decline(
        actor=Actor.for_user(assigner), commitment_id=c.pk, proposal_id=_open_proposal(c).pk
    )
    return c


def request_extension(assigner, assignee, external_id: str = "OPS-42") -> Commitment:
    c = mapped_active(assigner, assignee, external_id=external_id)
    services.commitment_extension_request(
        actor=Actor.for_user(assignee), commitment_id=c.pk, deadline=LATER, note=NOTE
    )
    return c


def grant_extension(assigner, assignee, external_id: str = "OPS-42") -> Commitment:
    c = request_extension(assigner, assignee, external_id)
    services.commitment_extension_grant(
        actor=Actor.for_user(assigner), commitment_id=c.pk, proposal_id=_open_proposal(c).pk
    )
    return c


def decline_extension(assigner, assignee, external_id: str = "OPS-42") -> Commitment:
    c = request_extension(assigner, assignee, external_id)
    services.commitment_extension_decline(
        actor=Actor.for_user(assigner),
        commitment_id=c.pk,
        proposal_id=_open_proposal(c).pk,
        note=NOTE,
    )
    return c


def withdraw(assigner, assignee, external_id: str = "OPS-42") -> Commitment:
    c = mapped_active(assigner, assignee, external_id=external_id)
    services.commitment_withdraw(actor=Actor.for_user(assigner), commitment_id=c.pk, reason=NOTE)
    return c


def reassign(assigner, assignee, external_id: str = "OPS-42") -> Commitment:
    c = mapped_active(assigner, assignee, external_id=external_id)
    services.commitment_reassign(
        actor=Actor.for_user(assigner),
        commitment_id=c.pk,
        assignee_email="second@example.com",
        note=NOTE,
    )
    return c


def comment(assigner, assignee, external_id: str = "OPS-42") -> Commitment:
    c = mapped_active(assigner, assignee, external_id=external_id)
    services.commitment_comment(actor=Actor.for_user(assignee), commitment_id=c.pk, body=COMMENT)
    return c


MOVES: dict[str, tuple[Callable, str, str]] = {
    # event: (the move, status before, status after)
    "commitment.proposed": (propose, "Pending_Handshake", "Pending_Handshake"),
    "commitment.proposal_declined": (decline_proposal, "Pending_Handshake", "Pending_Handshake"),
    "commitment.extension_requested": (request_extension, "Active", "Active"),
    "commitment.extension_granted": (grant_extension, "Active", "Active"),
    "commitment.extension_declined": (decline_extension, "Active", "Active"),
    "commitment.withdrawn": (withdraw, "Active", "Withdrawn"),
    "commitment.reassigned": (reassign, "Active", "Pending_Handshake"),
    "commitment.commented": (comment, "Active", "Active"),
}


@pytest.fixture(autouse=True)
def _second_person(make_user):
    make_user("second@example.com")  # whom `reassign` hands commitments to


def test_every_new_event_has_a_move_here():
    assert set(MOVES) == set(payloads.OPTIONAL_EVENTS)


# --- the four, unchanged ------------------------------------------------------------------


@pytest.mark.parametrize("chosen", [[], EVERY_OPTIONAL], ids=["chose-none", "chose-all"])
def test_the_four_contract_events_are_byte_for_byte_as_before_whatever_was_chosen(
    monkeypatch, published, receiver, assigner, assignee, chosen
):
    webhook_endpoint_create(user=assigner, external_system="jira", url=receiver.url, events=chosen)
    clock = install_clock(monkeypatch, T0)
    accepted = mapped_pending(assigner, assignee)
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=accepted.pk)
    declined = mapped_pending(assigner, assignee, external_id="OPS-43")
    services.commitment_decline(actor=Actor.for_user(assignee), commitment_id=declined.pk)
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=declined.pk, description="Sooner"
    )
    services.commitment_complete(actor=Actor.for_user(assignee), commitment_id=accepted.pk)
    clock.advance(seconds=1)
    dispatch_all()

    assert bodies("commitment.activated") == [
        exact(
            accepted, "commitment.activated", "activatedAt", "Pending_Handshake", "Active", assignee
        )
    ]
    assert bodies("commitment.completed") == [
        exact(accepted, "commitment.completed", "completedAt", "Active", "Completed", assignee)
    ]
    assert [b.replace("OPS-43", "OPS-42") for b in bodies("commitment.refused")] == [
        exact(declined, "commitment.refused", "refusedAt", "Pending_Handshake", "Refused", assignee)
    ]
    assert [b.replace("OPS-43", "OPS-42") for b in bodies("commitment.renegotiated")] == [
        exact(
            declined,
            "commitment.renegotiated",
            "renegotiatedAt",
            "Refused",
            "Pending_Handshake",
            assigner,
        )
    ]
    assert WebhookDelivery.objects.count() == 4


@pytest.mark.parametrize("chosen", [[], EVERY_OPTIONAL], ids=["chose-none", "chose-all"])
def test_accepting_a_counter_proposal_sends_the_contract_s_activated_exactly(
    monkeypatch, published, receiver, assigner, assignee, chosen
):
    webhook_endpoint_create(user=assigner, external_system="jira", url=receiver.url, events=chosen)
    commitment = propose(assigner, assignee)
    dispatch_all()
    WebhookDelivery.objects.all().delete()
    install_clock(monkeypatch, T0)
    services.commitment_proposal_accept(
        actor=Actor.for_user(assigner),
        commitment_id=commitment.pk,
        proposal_id=_open_proposal(commitment).pk,
    )
    event = OutboxEvent.objects.get(kind="activated")
    assert "proposalId" in event.detail  # the move was about a proposal ...
    dispatch_all()

    # ... and the envelope is the contract's, the assigner its actor, no extra field.
    assert bodies("commitment.activated") == [
        exact(
            commitment,
            "commitment.activated",
            "activatedAt",
            "Pending_Handshake",
            "Active",
            assigner,
        )
    ]
    assert WebhookDelivery.objects.count() == 1


# --- the eight, only when chosen ----------------------------------------------------------


@pytest.mark.parametrize("event_name", list(MOVES))
def test_a_new_event_goes_only_to_an_endpoint_that_chose_it(
    published, receiver, assigner, assignee, event_name
):
    endpoint, _ = webhook_endpoint_create(user=assigner, external_system="jira", url=receiver.url)
    move, previous, new = MOVES[event_name]
    others = [n for n in payloads.OPTIONAL_EVENTS if n != event_name]
    webhook_endpoint_choose_events(endpoint=endpoint, events=others)
    move(assigner, assignee, "OPS-41")
    dispatch_all()
    assert not WebhookDelivery.objects.filter(event_name=event_name).exists()
    assert OutboxEvent.objects.filter(kind=event_name.removeprefix("commitment.")).exists()

    webhook_endpoint_choose_events(endpoint=endpoint, events=[event_name])
    commitment = move(assigner, assignee)
    dispatch_all()

    [delivery] = WebhookDelivery.objects.filter(event_name=event_name).select_related("payload")
    assert delivery.commitment_id == commitment.pk and delivery.endpoint == endpoint
    body = json.loads(delivery.payload.body)
    event = OutboxEvent.objects.get(pk=delivery.event_id)
    stamp = payloads.iso_millis(event.occurred_at)
    expected = {
        "event": event_name,
        "id": str(commitment.pk),
        "externalSystem": "jira",
        "externalId": "OPS-42",
        "previousStatus": previous,
        "newStatus": new,
        payloads.TIMESTAMP_FIELDS[event_name]: stamp,
        "actor": {"kind": "user", "userId": str(event.actor_user_id)},
        "timestamp": stamp,
    }
    if event_name in payloads.PROPOSAL_EVENTS:
        proposal = Proposal.objects.get(commitment=commitment)
        expected["proposal"] = {"id": str(proposal.pk), "deadline": "2030-03-08T17:00:00.000Z"}
    assert body == expected
    assert list(body) == list(expected)  # the contract's order, the addition last
    # Never a person's words: no note, no reason, no comment, nobody's address.
    for words in (NOTE, COMMENT, "second@example.com", "knight@example.com"):
        assert words not in delivery.payload.body


def test_an_endpoint_from_before_the_choice_gets_the_four_and_nothing_new(
    published, receiver, assigner, assignee
):
    """A row made as migration 0004 leaves the endpoints there were: the
    field's default, the four."""
    endpoint, _ = webhook_endpoint_create(user=assigner, external_system="jira", url=receiver.url)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(events=list(payloads.CONTRACT_EVENTS))
    for n, (move, _, _) in enumerate(MOVES.values()):
        move(assigner, assignee, f"OPS-{n}")
    c = mapped_active(assigner, assignee, external_id="OPS-9")
    services.commitment_complete(actor=Actor.for_user(assignee), commitment_id=c.pk)
    dispatch_all()

    sent = set(WebhookDelivery.objects.values_list("event_name", flat=True))
    assert sent == {"commitment.activated", "commitment.completed"}
    assert OutboxEvent.objects.filter(kind="withdrawn").exists()  # happened, not sent


def test_choosing_one_new_event_sends_that_one_only(published, receiver, assigner, assignee):
    webhook_endpoint_create(
        user=assigner,
        external_system="jira",
        url=receiver.url,
        events=["commitment.withdrawn"],
    )
    for n, (move, _, _) in enumerate(MOVES.values()):
        move(assigner, assignee, f"OPS-{n}")
    dispatch_all()

    sent = set(WebhookDelivery.objects.values_list("event_name", flat=True))
    assert sent - set(payloads.CONTRACT_EVENTS) == {"commitment.withdrawn"}


def test_a_new_event_about_a_commitment_without_a_mapping_sends_nothing(
    published, receiver, assigner, assignee
):
    webhook_endpoint_create(
        user=assigner, external_system="jira", url=receiver.url, events=EVERY_OPTIONAL
    )
    c = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="No tracker",
        deadline=None,
    )
    services.commitment_comment(actor=Actor.for_user(assigner), commitment_id=c.pk, body="Hi")
    services.commitment_withdraw(actor=Actor.for_user(assigner), commitment_id=c.pk)
    dispatch_all()
    assert not WebhookDelivery.objects.exists()


def test_an_unchosen_event_does_not_pause_the_endpoint_of_a_deactivated_owner(
    published, receiver, assigner, assignee
):
    """An event that would not be sent is no send: nothing to pause for."""
    endpoint, _ = webhook_endpoint_create(user=assigner, external_system="jira", url=receiver.url)
    c = mapped_active(assigner, assignee)
    dispatch_all()
    services.commitment_comment(actor=Actor.for_user(assignee), commitment_id=c.pk, body="Hi")
    type(assigner).objects.filter(pk=assigner.pk).update(is_active=False)
    WebhookDelivery.objects.all().delete()
    dispatch_all()
    endpoint.refresh_from_db()
    assert not endpoint.is_paused and not WebhookDelivery.objects.exists()


# --- choosing: the service, the test event -------------------------------------------------


def test_choosing_keeps_the_four_first_in_the_page_s_order_and_is_on_the_audit_trail(
    receiver, assigner
):
    endpoint, _ = webhook_endpoint_create(user=assigner, external_system="jira", url=receiver.url)
    assert endpoint.events == list(payloads.CONTRACT_EVENTS)

    webhook_endpoint_choose_events(
        endpoint=endpoint, events=["commitment.commented", "commitment.proposed"]
    )
    endpoint.refresh_from_db()
    assert endpoint.events == [
        *payloads.CONTRACT_EVENTS,
        "commitment.proposed",
        "commitment.commented",
    ]
    assert endpoint.chosen_events == ["commitment.proposed", "commitment.commented"]
    changed = AuditEvent.objects.get(action="webhook_endpoint_changed")
    assert changed.user == assigner
    assert changed.payload == {
        "events": {"old": list(payloads.CONTRACT_EVENTS), "new": endpoint.events}
    }

    webhook_endpoint_choose_events(
        endpoint=endpoint, events=["commitment.proposed", "commitment.commented"]
    )
    assert AuditEvent.objects.filter(action="webhook_endpoint_changed").count() == 1


@pytest.mark.parametrize("bad", [["commitment.test"], ["commitment.nope"], ["withdrawn"]])
def test_choosing_an_unknown_event_is_refused_and_changes_nothing(receiver, assigner, bad):
    endpoint, _ = webhook_endpoint_create(user=assigner, external_system="jira", url=receiver.url)
    with pytest.raises(WebhookError) as refused:
        webhook_endpoint_choose_events(endpoint=endpoint, events=["commitment.proposed", *bad])
    assert refused.value.field == "events"
    assert bad[0] in refused.value.message
    endpoint.refresh_from_db()
    assert endpoint.events == list(payloads.CONTRACT_EVENTS)
    assert not AuditEvent.objects.filter(action="webhook_endpoint_changed").exists()
    with pytest.raises(WebhookError):
        webhook_endpoint_create(
            user=assigner, external_system="linear", url=receiver.url, events=bad
        )
    assert not WebhookEndpoint.objects.filter(external_system="linear").exists()


def test_the_test_event_lists_the_events_the_endpoint_receives(published, receiver, assigner):
    endpoint, _ = webhook_endpoint_create(
        user=assigner,
        external_system="jira",
        url=receiver.url,
        events=["commitment.commented", "commitment.withdrawn"],
    )
    delivery = webhook_test_send(endpoint=endpoint)
    body = json.loads(delivery.payload.body)
    assert body["event"] == "commitment.test" and body["test"] is True
    assert body["events"] == [
        *payloads.CONTRACT_EVENTS,
        "commitment.withdrawn",
        "commitment.commented",
    ]
