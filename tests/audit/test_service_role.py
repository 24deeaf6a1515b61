"""Beyond the trigger: the role the service runs as may only append to and read
the audit trail, while every other table stays writable to it.

A role of the test's own is created, `grant_service_role` gives it its
privileges as production's migrate step does, and the test switches to it
with SET ROLE (the test connection is a superuser, which privileges do not
bind). PostgreSQL only: SQLite has no roles.
"""

from __future__ import annotations

import uuid
from contextlib import contextmanager

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from audit.models import AuditEvent
from audit.services import Actor
from commitments import services
from commitments.models import Commitment, OutboxEvent

pytestmark = pytest.mark.postgres


@pytest.fixture
def role():
    name = f"svc_test_{uuid.uuid4().hex[:12]}"
    yield name
    with connection.cursor() as cursor:
        cursor.execute("RESET ROLE")
        cursor.execute(f"DROP TABLE IF EXISTS {name}_later")
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [name])
        if cursor.fetchone():
            cursor.execute(f'DROP OWNED BY "{name}"')
            cursor.execute(f'DROP ROLE "{name}"')


@pytest.fixture
def service_role(role):
    call_command("grant_service_role", role)
    return role


@contextmanager
def acting_as(role: str):
    with connection.cursor() as cursor:
        cursor.execute(f'SET ROLE "{role}"')
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET ROLE")


@pytest.fixture
def commitment(assigner, assignee):
    return services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Keep a record",
        deadline=None,
    )


@pytest.mark.parametrize(
    ("statement", "refusal"),
    [
        ("TRUNCATE audit_auditevent", "permission denied for table audit_auditevent"),
        ("DELETE FROM audit_auditevent", "permission denied for table audit_auditevent"),
        (
            "UPDATE audit_auditevent SET action = 'x'",
            "permission denied for table audit_auditevent",
        ),
        (
            "ALTER TABLE audit_auditevent DISABLE TRIGGER audit_event_append_only",
            "must be owner of table audit_auditevent",
        ),
        (
            "DROP TRIGGER audit_event_append_only ON audit_auditevent",
            "must be owner of (table|relation) audit_auditevent",
        ),
    ],
)
def test_the_service_role_cannot_rewrite_or_empty_the_audit_trail(
    service_role, commitment, statement, refusal
):
    before = list(AuditEvent.objects.values_list("pk", "action"))
    assert before

    with (
        acting_as(service_role),
        pytest.raises(DatabaseError, match=refusal),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(statement)

    assert list(AuditEvent.objects.values_list("pk", "action")) == before


def test_the_service_role_appends_and_reads_the_trail_and_writes_the_other_tables(
    service_role, assigner, assignee
):
    with acting_as(service_role):
        created = services.commitment_create_pending(
            actor=Actor.for_user(assigner),
            assigner=assigner,
            assignee=assignee,
            description="Done as the service",
            deadline=None,
        )
        services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=created.pk)
        actions = [e.action for e in AuditEvent.objects.for_object(created)]
        Commitment.objects.filter(pk=created.pk).update(description="Edited as the service")
        OutboxEvent.objects.filter(commitment=created).delete()
        Commitment.objects.filter(pk=created.pk).delete()

    assert actions == ["created", "accepted"]
    assert not Commitment.objects.filter(pk=created.pk).exists()


def test_tables_made_by_later_migrations_are_granted_by_default(service_role):
    # The owner creates a table after the grants, as a later `migrate` would.
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE {service_role}_later (id serial PRIMARY KEY, note text)")

    with acting_as(service_role), connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {service_role}_later (note) VALUES ('x')")
        cursor.execute(f"UPDATE {service_role}_later SET note = 'y'")
        cursor.execute(f"DELETE FROM {service_role}_later")


def test_running_the_grants_again_changes_nothing(service_role, commitment):
    call_command("grant_service_role", service_role)

    with (
        acting_as(service_role),
        pytest.raises(DatabaseError, match="permission denied"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("DELETE FROM audit_auditevent")


def test_it_creates_the_role_with_its_password_from_the_environment(role, monkeypatch):
    monkeypatch.setenv("SERVICE_DB_PASSWORD", "it's a secret")

    call_command("grant_service_role", role, password_from_env="SERVICE_DB_PASSWORD")

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT rolcanlogin, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles "
            "WHERE rolname = %s",
            [role],
        )
        assert cursor.fetchone() == (True, False, False, False)


def test_it_refuses_the_owner_itself(db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user")
        (me,) = cursor.fetchone()

    with pytest.raises(CommandError, match="owns the tables"):
        call_command("grant_service_role", me)


def test_it_refuses_a_superuser_role(role):
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE ROLE "{role}" SUPERUSER')

    with pytest.raises(CommandError, match="superuser"):
        call_command("grant_service_role", role)
