"""A refused move writes nothing, and on PostgreSQL it also announces
nothing: its one statement inserts no outbox row, and the outbox trigger
(migrations commitments 0006 and 0011) notifies the relay only for a
statement that inserted one. A notifying transaction takes a transaction id
and, at commit, the cluster's notification lock, so a replayed sync that
notified queued with the writes it did not make."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from audit.services import Actor
from commitments import services
from commitments.errors import InvalidTransition, NotPermitted
from commitments.models import OutboxEvent, Status
from commitments.outbox import OUTBOX_CHANNEL
from tests.harness.webhooks import mapped_active

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def listener():
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    conn = psycopg.connect(**params, autocommit=True)
    conn.execute(f"LISTEN {OUTBOX_CHANNEL}")
    yield conn
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
