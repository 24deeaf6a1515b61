"""Only a verified primary address of an active account is nudged: work is
routed by address, and an address nobody proved belongs to nobody yet."""

from __future__ import annotations

import pytest
from allauth.account.models import EmailAddress
from django.core import mail

from audit.services import Actor
from commitments import services
from commitments.models import EventKind, OutboxEvent
from lib import jobs
from notifications.models import NudgeDelivery
from relay import outbox

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _settings(settings, monkeypatch):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []
    monkeypatch.setattr(jobs, "enqueue", lambda *args, **kwargs: True)


def ask(assigner, assignee) -> OutboxEvent:
    commitment = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Write the runbook",
        deadline=None,
    )
    event = OutboxEvent.objects.get(commitment=commitment, kind=EventKind.HANDSHAKE_REQUESTED)
    outbox.outbox_event_dispatch(event_id=event.pk)
    return event


def test_a_verified_assignee_is_nudged(assigner, assignee):
    event = ask(assigner, assignee)

    assert NudgeDelivery.objects.filter(event=event, recipient=assignee).count() == 1


def test_an_unverified_address_receives_no_nudge(assigner, make_user):
    claimed = make_user("newhire@corp.example", verified=False)

    event = ask(assigner, claimed)

    assert not NudgeDelivery.objects.filter(event=event).exists()
    assert mail.outbox == []


def test_a_deactivated_account_receives_no_nudge(assigner, assignee):
    assignee.is_active = False
    assignee.save(update_fields=["is_active"])

    event = ask(assigner, assignee)

    assert not NudgeDelivery.objects.filter(event=event).exists()


def test_once_the_owner_verifies_the_address_the_next_request_is_nudged(assigner, make_user):
    claimed = make_user("newhire@corp.example", verified=False)
    ask(assigner, claimed)

    # As allauth leaves it once the owner types the mailed code.
    EmailAddress.objects.create(user=claimed, email=claimed.email, primary=True, verified=True)
    event = ask(assigner, claimed)

    assert NudgeDelivery.objects.filter(event=event, recipient=claimed).count() == 1
