"""audit 0005: the stored `provider_key_*` actions become `model_key_*`, one
to one, and nothing else in a row changes; other actions are left alone.
Reversing gives the old words back. On PostgreSQL the append-only trigger is
off only inside the migration: an UPDATE after it is refused again."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from audit.models import AuditAction
from tests.harness.migrations import latest, migrate, schema_before

BEFORE = [("audit", "0004_tracker_actor")]
OLD_TO_NEW = {
    "provider_key_set": AuditAction.MODEL_KEY_SET,
    "provider_key_replaced": AuditAction.MODEL_KEY_REPLACED,
    "provider_key_model_changed": AuditAction.MODEL_KEY_MODEL_CHANGED,
    "provider_key_made_default": AuditAction.MODEL_KEY_MADE_DEFAULT,
    "provider_key_deleted": AuditAction.MODEL_KEY_DELETED,
}


def stored() -> dict[str, tuple]:
    """Every row's action and the rest of it, by id, as the table holds them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, action, actor_kind, user_id, subject_id, payload, occurred_at"
            " FROM audit_auditevent"
        )
        return {str(row[0]): row[1:] for row in cursor.fetchall()}


@pytest.fixture
def old_schema():
    """The database as it was before 0005, and its models."""
    with schema_before(BEFORE) as apps:
        yield apps


@pytest.mark.django_db(transaction=True)
def test_stored_provider_key_actions_are_renamed_and_nothing_else_changes(old_schema):
    user = old_schema.get_model("accounts", "User").objects.create(email="kay@example.com")
    event = old_schema.get_model("audit", "AuditEvent")
    subject_type = old_schema.get_model("contenttypes", "ContentType").objects.get(
        app_label="accounts", model="user"
    )
    for action in [*OLD_TO_NEW, "declined", "api_token_minted"]:
        event.objects.create(
            actor_kind="user",
            user=user,
            action=action,
            subject_type=subject_type,
            subject_id=user.pk,
            payload={"provider": "openai", "was": action},
        )
    before = stored()

    migrate(latest())

    after = stored()
    assert after.keys() == before.keys()
    for row_id, (action, *rest) in before.items():
        assert after[row_id] == (OLD_TO_NEW.get(action, action), *rest)
    assert sorted(a for a, *_ in after.values()) == sorted(
        [*OLD_TO_NEW.values(), "declined", "api_token_minted"]
    )

    migrate(BEFORE)  # and back: the old words, for the code before
    assert stored() == before


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_append_only_trigger_is_on_again_after_the_migration(old_schema, assigner):
    from audit.services import Actor, audit_event_record

    migrate(latest())
    event = audit_event_record(
        actor=Actor.for_user(assigner), subject=assigner, action=AuditAction.MODEL_KEY_SET
    )

    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            "UPDATE audit_auditevent SET action = 'provider_key_set' WHERE id = %s", [event.pk]
        )
