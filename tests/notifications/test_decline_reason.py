"""A decline's optional reason (given in the Accord) reaches the assigner in
the nudge that tells them."""

from __future__ import annotations

import pytest

from audit.services import Actor
from commitments import services
from commitments.models import EventKind, OutboxEvent
from notifications.nudges import nudge_message

pytestmark = pytest.mark.django_db


def declined(assigner, assignee, **extra):
    c = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Slay the rabbit",
        deadline=None,
    )
    services.commitment_decline(actor=Actor.for_user(assignee), commitment_id=c.pk, **extra)
    return OutboxEvent.objects.get(commitment=c, kind=EventKind.REFUSED)


def test_the_reason_is_in_the_nudge(assigner, assignee):
    event = declined(assigner, assignee, reason="  Too dangerous ")

    message = nudge_message(event=event, recipient=assigner)

    assert "Knight declined your request: Slay the rabbit\nTheir reason: Too dangerous\n" in (
        message.text
    )


def test_without_a_reason_the_nudge_says_nothing_of_one(assigner, assignee):
    event = declined(assigner, assignee)

    assert "reason" not in nudge_message(event=event, recipient=assigner).text


def test_a_long_reason_is_cut(assigner, assignee):
    event = declined(assigner, assignee, reason="x" * 2000)

    assert "x" * 500 + "\n" in nudge_message(event=event, recipient=assigner).text
    assert "x" * 501 not in nudge_message(event=event, recipient=assigner).text
