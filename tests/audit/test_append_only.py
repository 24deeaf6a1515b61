"""The audit trail cannot be rewritten: not through the model, not through raw SQL."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from audit.models import AppendOnlyError, AuditEvent
from audit.services import Actor
from commitments import services


@pytest.fixture
def event(assigner, assignee):
    c = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Keep a record",
        deadline=None,
    )
    return AuditEvent.objects.for_object(c).get()


@pytest.mark.django_db
def test_the_model_refuses_to_save_an_existing_event(event):
    event.action = "rewritten"
    with pytest.raises(AppendOnlyError):
        event.save()
    assert AuditEvent.objects.get(pk=event.pk).action == "created"


@pytest.mark.django_db
def test_the_model_and_queryset_refuse_to_delete(event):
    with pytest.raises(AppendOnlyError):
        event.delete()
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.all().delete()
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.filter(pk=event.pk).update(action="rewritten")
    assert AuditEvent.objects.filter(pk=event.pk, action="created").exists()


@pytest.mark.postgres
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE audit_auditevent SET action = 'rewritten'",
        "UPDATE audit_auditevent SET payload = '{}'::jsonb WHERE id = %s",
        "DELETE FROM audit_auditevent WHERE id = %s",
        "DELETE FROM audit_auditevent",
    ],
)
def test_raw_sql_update_or_delete_fails_on_postgresql(sql, event):
    params = [event.pk] if "%s" in sql else []
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql, params)
    stored = AuditEvent.objects.get(pk=event.pk)
    assert stored.action == "created"
    assert stored.payload == event.payload
