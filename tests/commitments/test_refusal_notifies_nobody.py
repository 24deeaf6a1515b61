"""A refused move writes nothing, and on PostgreSQL it also announces
nothing: its one statement inserts no outbox row, and the outbox trigger
(migrations commitments 0006, 0011 and 0012) notifies the relay only for a
row inserted, and only while a relay waits. A notifying transaction takes a
transaction id and, at commit, the cluster's notification lock, so a
replayed sync that notified queued with the writes it did not make; and a
completing move that notifies while no relay waits queues with the others
for nothing."""

from __future__ import annotations

import psycopg
import pytest

from audit.services import Actor
from commitments import services
from commitments.errors import InvalidTransition, NotPermitted
from commitments.models import OutboxEvent, Status
from commitments.outbox import (
    outbox_relay_gone,
    outbox_relay_works,
)
from tests.harness.outbox import listening_as_a_relay
from tests.harness.webhooks import mapped_active

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def listener():
    # A relay waiting, as the listener's connection says (relay/listener.py).
    conn = listening_as_a_relay()
    yield conn
    outbox_relay_gone(conn, relay="test")
    conn.close()


def heard(listener: psycopg.Connection, timeout: float = 0.3) -> int:
    return len(list(listener.notifies(timeout=timeout)))


def test_a_replayed_or_refused_sync_notifies_nobody(listener, assigner, assignee, make_user):
    commitment = mapped_active(assigner, assignee, system="bench", external_id="done-1")
    token = Actor.for_user(assigner)
    reference = {"external_system": "bench", "external_id": "done-1"}
    heard(listener)  # the creation's and the acceptance's

    result = services.commitment_complete(actor=token, replay_is_noop=True, **reference)
    assert result.changed and result.commitment.status == Status.COMPLETED
    assert heard(listener, timeout=2) == 1  # the move that wrote announces its event

    events = OutboxEvent.objects.count()
    replay = services.commitment_complete(actor=token, replay_is_noop=True, **reference)
    assert not replay.changed and replay.commitment.pk == commitment.pk
    with pytest.raises(InvalidTransition):  # not a replay: refused
        services.commitment_complete(actor=token, **reference)
    with pytest.raises(NotPermitted):
        services.commitment_complete(actor=Actor.for_user(make_user()), commitment_id=commitment.pk)
    assert OutboxEvent.objects.count() == events
    assert heard(listener, timeout=0.5) == 0


def test_a_completing_move_notifies_only_while_a_relay_waits(listener, assigner, assignee):
    token = Actor.for_user(assigner)
    for external_id in ("waits-1", "works-1"):
        mapped_active(assigner, assignee, system="bench", external_id=external_id)
    heard(listener)  # the creations' and the acceptances'

    services.commitment_complete(actor=token, external_system="bench", external_id="waits-1")
    assert heard(listener, timeout=2) == 1

    outbox_relay_works(listener, relay="test")  # woken: the relay looks, nobody waits
    result = services.commitment_complete(
        actor=token, external_system="bench", external_id="works-1"
    )
    assert result.changed and result.commitment.status == Status.COMPLETED
    assert heard(listener, timeout=0.5) == 0
