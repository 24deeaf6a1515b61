"""lib.db.write_together: rows written as save() would write them, in one
statement on PostgreSQL (a transaction by itself), one by one elsewhere; all
or nothing."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from audit.services import Actor, audit_event_build
from commitments.models import Commitment, EventKind, OutboxEvent, Status
from lib.db import write_together

pytestmark = pytest.mark.django_db


def rows(assigner, assignee, **extra):
    commitment = Commitment(
        status=Status.PENDING_HANDSHAKE,
        assigner=assigner,
        assignee=assignee,
        description="Ship it",
        **extra,
    )
    audit = audit_event_build(
        actor=Actor.for_user(assigner), subject=commitment, action="created", payload={"a": [1]}
    )
    outbox = OutboxEvent(
        commitment=commitment,
        kind=EventKind.HANDSHAKE_REQUESTED,
        new_status=commitment.status,
        actor_kind="user",
        actor_user=assigner,
    )
    return commitment, audit, outbox


def test_inserts_are_written_as_save_writes_them(assigner, assignee):
    commitment, audit, outbox = rows(assigner, assignee)
    # The outbox row first: the foreign keys are checked at commit, not in order.
    write_together(inserts=[outbox, audit, commitment])
    assert outbox.pk is not None  # made by the database, returned
    assert not commitment._state.adding and commitment._state.db == "default"
    stored = Commitment.objects.get(pk=commitment.pk)
    assert stored.description == "Ship it"
    assert stored.created_at == commitment.created_at
    stored_audit = AuditEvent.objects.get(pk=audit.pk)
    assert stored_audit.occurred_at == audit.occurred_at  # auto_now_add, as save() sets it
    assert stored_audit.payload == {"a": [1]}
    assert OutboxEvent.objects.get(pk=outbox.pk).commitment_id == commitment.pk


def test_an_update_and_inserts(assigner, assignee):
    commitment = rows(assigner, assignee)[0]
    write_together(inserts=[commitment])
    commitment.status = Status.ACTIVE
    commitment.description = "Not written: not named"
    later = rows(assigner, assignee)[2]
    later.commitment = commitment
    write_together(inserts=[later], updates=[(commitment, ["status"])])
    stored = Commitment.objects.get(pk=commitment.pk)
    assert (stored.status, stored.description) == (Status.ACTIVE, "Ship it")
    assert OutboxEvent.objects.filter(commitment=commitment).count() == 1


def test_the_writes_are_one_statement_on_postgresql(assigner, assignee):
    commitment, audit, outbox = rows(assigner, assignee)
    with CaptureQueriesContext(connection) as captured:
        write_together(inserts=[commitment, audit, outbox])
    statements = [q["sql"] for q in captured.captured_queries]
    if connection.vendor == "postgresql":
        assert len(statements) == 1 and statements[0].startswith("WITH w0 AS (INSERT")
    else:
        assert [s.split()[0] for s in statements] == ["INSERT"] * 3


def test_all_or_nothing(assigner, assignee):
    first = rows(assigner, assignee, external_system="jira", external_id="OPS-1")[0]
    write_together(inserts=[first])
    commitment, audit, outbox = rows(
        assigner, assignee, external_system="jira", external_id="OPS-1"
    )
    with (
        pytest.raises(IntegrityError),
        transaction.atomic(),
    ):
        write_together(inserts=[audit, outbox, commitment])  # the duplicate comes last
    assert Commitment.objects.count() == 1
    assert not AuditEvent.objects.exists()
    assert not OutboxEvent.objects.exists()
