"""The same delivery twice at the same instant (a tracker's retry racing the
first attempt): one commitment, one log row, and the other answer says it was
a redelivery."""

from __future__ import annotations

import pytest
from django.test import Client

from commitments.models import Commitment
from tests.harness.concurrency import race
from tests.harness.tracker_payloads import issues_event
from tests.harness.trackers import connect, deliver
from trackers.models import TrackerEvent


@pytest.mark.postgres
def test_two_copies_of_one_delivery_at_once_act_once(assigner, assignee):
    connection, secret = connect(assigner, "github", **{"knight-gh": "knight@example.com"})
    payload = issues_event("assigned")

    def send():
        return deliver(Client(), connection, secret, payload, delivery="same").json()

    answers = race([send, send, send])
    assert sorted(a["redelivery"] for a in answers) == [False, True, True]
    assert Commitment.objects.count() == 1
    assert TrackerEvent.objects.count() == 1


@pytest.mark.postgres
def test_one_body_under_three_delivery_ids_at_once_acts_once(assigner, assignee):
    """A captured delivery replayed under fresh ids while the first arrives:
    the body's digest is unique per connection, so one of them acts."""
    connection, secret = connect(assigner, "github", **{"knight-gh": "knight@example.com"})
    payload = issues_event("assigned")

    def send(delivery: str):
        return lambda: deliver(Client(), connection, secret, payload, delivery=delivery).json()

    answers = race([send("a"), send("b"), send("c")])
    assert sorted(a["redelivery"] for a in answers) == [False, True, True]
    assert Commitment.objects.count() == 1
    assert TrackerEvent.objects.count() == 1
