"""The nudge cap: at most NUDGE_CAP nudges to one assignee about one
assigner's requests in an hour; the rest wait, together, for one digest
nudge that goes out when the hour allows. Called directly here (dispatch,
sweep, send); tests/relay/test_worker.py floods a real worker."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core import mail
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import EventKind, OutboxEvent
from lib import jobs
from notifications import dispatch, sending
from notifications.models import AttemptOutcome, NudgeDelivery, NudgeDeliveryStatus
from relay import outbox

pytestmark = pytest.mark.django_db

CAP = 3
HOUR = dt.timedelta(hours=1)


@pytest.fixture(autouse=True)
def _settings(settings, monkeypatch):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.SITE_URL = "https://commitments.example.com"
    settings.NUDGE_CAP = CAP
    settings.NUDGE_CAP_WINDOW = 3600
    mail.outbox = []
    monkeypatch.setattr(jobs, "enqueue", lambda *args, **kwargs: True)


def request_of(assigner, assignee, n: int) -> OutboxEvent:
    commitment = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description=f"Request number {n}",
        deadline=None,
    )
    return OutboxEvent.objects.get(commitment=commitment, kind=EventKind.HANDSHAKE_REQUESTED)


def flood(assigner, assignee, count: int, *, start: int = 0) -> list[NudgeDelivery]:
    """`count` requests, each dispatched as the worker would; their deliveries."""
    deliveries = []
    for n in range(start, start + count):
        event = request_of(assigner, assignee, n)
        outbox.outbox_event_dispatch(event_id=event.pk)
        deliveries.append(NudgeDelivery.objects.get(event=event))
    return deliveries


def send_everything_due() -> list[str | None]:
    """What the sweep would queue now, sent."""
    now = timezone.now()
    ids = dispatch.nudge_deliveries_take_due(now=now, requeue_after=dt.timedelta(0), limit=500)
    return [sending.nudge_send(delivery_id=i) for i in ids]


def send_now(deliveries: list[NudgeDelivery]) -> None:
    for d in deliveries:
        assert sending.nudge_send(delivery_id=d.pk) == AttemptOutcome.DELIVERED


def move_back(delivery: NudgeDelivery, by: dt.timedelta) -> None:
    """As if this row had been made `by` earlier."""
    delivery.refresh_from_db()
    NudgeDelivery.objects.filter(pk=delivery.pk).update(
        counted_at=delivery.counted_at - by if delivery.counted_at else None,
        next_attempt_at=delivery.next_attempt_at - by,
    )


def make_due(delivery: NudgeDelivery) -> None:
    delivery.refresh_from_db()
    move_back(delivery, delivery.next_attempt_at - timezone.now() + dt.timedelta(seconds=1))


def test_under_the_cap_each_request_is_nudged_at_once(assigner, assignee):
    deliveries = flood(assigner, assignee, CAP)

    assert [d.status for d in deliveries] == [NudgeDeliveryStatus.PENDING] * CAP
    assert not any(d.is_digest for d in deliveries)
    for d in deliveries:
        sending.nudge_send(delivery_id=d.pk)
    assert len(mail.outbox) == CAP


def test_over_the_cap_one_digest_waits_for_the_hour_and_the_rest_are_held(assigner, assignee):
    deliveries = flood(assigner, assignee, CAP + 4)
    first, digest, held = deliveries[0], deliveries[CAP], deliveries[CAP + 1 :]

    assert digest.is_digest
    assert digest.status == NudgeDeliveryStatus.PENDING
    assert digest.enqueued_at is None  # not queued: the sweep takes it when due
    assert digest.next_attempt_at == first.counted_at + HOUR
    assert {d.status for d in held} == {NudgeDeliveryStatus.HELD}
    assert {d.digest_id for d in held} == {digest.pk}


def test_the_digest_goes_out_when_the_hour_allows_and_lists_every_held_request(assigner, assignee):
    deliveries = flood(assigner, assignee, CAP + 4)
    send_now(deliveries[:CAP])
    digest = deliveries[CAP]

    assert send_everything_due() == []  # not before its time
    assert sending.nudge_send(delivery_id=digest.pk) is None
    assert len(mail.outbox) == CAP

    for d in deliveries:  # the hour goes by
        move_back(d, HOUR)
    assert send_everything_due() == [AttemptOutcome.DELIVERED]

    assert len(mail.outbox) == CAP + 1
    message = mail.outbox[-1]
    assert message.to == ["knight@example.com"]
    assert message.subject == "Lead sent you 4 more requests"
    for n in range(CAP, CAP + 4):
        assert f"Request number {n}\n" in message.body
    for n in range(CAP):
        assert f"Request number {n}\n" not in message.body
    for d in deliveries[CAP:]:
        assert f"/commitments/{d.event.commitment_id}" in message.body
        d.refresh_from_db()
        assert d.status == NudgeDeliveryStatus.DELIVERED
    assert NudgeDelivery.objects.filter(status=NudgeDeliveryStatus.HELD).count() == 0


def test_what_comes_while_the_digest_is_being_sent_starts_the_next_one(
    assigner, assignee, monkeypatch
):
    deliveries = flood(assigner, assignee, CAP + 1)
    send_now(deliveries[:CAP])
    # The oldest nudge leaves the hour: the digest is due, the cap full again with it.
    move_back(deliveries[0], HOUR + dt.timedelta(seconds=1))
    make_due(deliveries[CAP])
    # A request arrives while the digest is out (claimed, not yet recorded).
    real_transport_for = sending.transport_for
    late: list[NudgeDelivery] = []

    def transport_for(kind, address):
        late.extend(flood(assigner, assignee, 1, start=100))
        return real_transport_for(kind, address)

    monkeypatch.setattr(sending, "transport_for", transport_for)
    assert send_everything_due() == [AttemptOutcome.DELIVERED]

    (next_one,) = late
    assert next_one.is_digest and next_one.status == NudgeDeliveryStatus.PENDING
    assert "Request number 100" not in mail.outbox[-1].body
    # Due when the oldest of the hour's nudges (here the digest just sent) leaves it.
    assert next_one.next_attempt_at > timezone.now() + HOUR - dt.timedelta(minutes=1)


def test_after_the_hour_requests_are_nudged_at_once_again(assigner, assignee):
    deliveries = flood(assigner, assignee, CAP)
    for d in deliveries:
        move_back(d, HOUR)

    (later,) = flood(assigner, assignee, 1, start=10)

    assert not later.is_digest
    assert later.status == NudgeDeliveryStatus.PENDING
    assert later.enqueued_at is not None


def test_the_cap_is_per_assigner(assigner, assignee, make_user):
    flood(assigner, assignee, CAP)
    other = make_user("other-lead@example.com", display_name="Other")

    (theirs,) = flood(other, assignee, 1)

    assert not theirs.is_digest
    assert theirs.status == NudgeDeliveryStatus.PENDING


def test_nudges_to_the_assigner_are_not_counted(assigner, assignee):
    deliveries = flood(assigner, assignee, CAP)
    for d in deliveries:
        # The assignee's answers (as the accept service writes them) tell the assigner.
        answer = OutboxEvent.objects.create(
            commitment_id=d.event.commitment_id,
            kind=EventKind.ACTIVATED,
            previous_status="Pending_Handshake",
            new_status="Active",
            actor_kind="user",
            actor_user=assignee,
        )
        outbox.outbox_event_dispatch(event_id=answer.pk)

    to_assigner = NudgeDelivery.objects.filter(recipient=assigner)
    assert to_assigner.count() == CAP
    assert {d.sender_id for d in to_assigner} == {None}
    assert {d.status for d in to_assigner} == {NudgeDeliveryStatus.PENDING}
    assert not to_assigner.filter(is_digest=True).exists()


def test_a_digest_that_fails_for_now_keeps_what_it_holds_and_takes_more(
    assigner, assignee, monkeypatch
):
    from notifications.transports import TransportError

    deliveries = flood(assigner, assignee, CAP + 2)
    send_now(deliveries[:CAP])
    digest = deliveries[CAP]
    make_due(digest)
    real_transport_for = sending.transport_for
    down = [True]

    class Down:
        def notify(self, message):
            raise TransportError("The mail server is down.")

    def transport_for(kind, address):
        return Down() if down[0] else real_transport_for(kind, address)

    monkeypatch.setattr(sending, "transport_for", transport_for)
    assert send_everything_due() == [AttemptOutcome.TRANSIENT]
    digest.refresh_from_db()
    assert digest.status == NudgeDeliveryStatus.PENDING

    (more,) = flood(assigner, assignee, 1, start=50)
    assert more.status == NudgeDeliveryStatus.HELD and more.digest_id == digest.pk

    down[0] = False
    make_due(digest)
    assert send_everything_due() == [AttemptOutcome.DELIVERED]
    message = mail.outbox[-1]
    assert message.subject == "Lead sent you 3 more requests"
    assert "Request number 50\n" in message.body


@pytest.mark.postgres
def test_workers_dispatching_at_once_still_keep_the_cap(assigner, assignee):
    from tests.harness.concurrency import race

    events = [request_of(assigner, assignee, n) for n in range(12)]

    race([lambda e=e: outbox.outbox_event_dispatch(event_id=e.pk) for e in events])

    deliveries = NudgeDelivery.objects.filter(recipient=assignee)
    assert deliveries.count() == 12
    singles = deliveries.filter(is_digest=False, status=NudgeDeliveryStatus.PENDING)
    assert singles.count() == CAP
    (digest,) = deliveries.filter(is_digest=True)
    assert set(
        deliveries.filter(status=NudgeDeliveryStatus.HELD).values_list("digest", flat=True)
    ) == {digest.pk}
    assert deliveries.filter(status=NudgeDeliveryStatus.HELD).count() == 12 - CAP - 1


def test_the_admin_shows_a_held_delivery_and_its_digest(assigner, assignee, staff_client):
    deliveries = flood(assigner, assignee, CAP + 2)
    held = deliveries[-1]

    page = staff_client.get(f"/admin/notifications/nudgedelivery/{held.pk}/change/")

    assert page.status_code == 200
    text = page.content.decode()
    assert "Held for a digest" in text
    assert f"/admin/notifications/nudgedelivery/{deliveries[CAP].pk}/change/" in text
    listing = staff_client.get("/admin/notifications/nudgedelivery/?is_digest__exact=1")
    assert listing.status_code == 200
