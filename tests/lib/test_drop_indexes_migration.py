"""lib.migrations.DropIndexesConcurrently, in the two migrations that use it
(commitments 0013, audit 0008): the indexes another index already serves are
gone from the newest schema, are there again when the migrations are
reversed, and go when they are applied; the partial invitation index comes
and goes with them. The foreign keys whose own indexes go stay, checked."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.harness.migrations import latest, migrate, schema_before

BEFORE = [
    ("commitments", "0012_outbox_notify_only_a_waiting_relay"),
    ("audit", "0007_search_indexes"),
]
DROPPED = {
    "commitments_commitment": {
        "commitments_commitment_assignee_id_ecde0fb4",
        "commitments_commitment_assigner_id_dd427648",
        "commitments_commitment_invitation_id_bd15b3de",
    },
    "audit_auditevent": {
        "audit_auditevent_action_2131bb77",
        "audit_auditevent_action_2131bb77_like",  # PostgreSQL's only
        "audit_auditevent_subject_type_id_a4ecf56f",
    },
}


def indexes(table: str) -> set[str]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    return {name for name, c in constraints.items() if c["index"] and not c["unique"]}


def foreign_keys(table: str) -> set[str]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    return {c["columns"][0] for c in constraints.values() if c["foreign_key"]}


def dropped_here(table: str) -> set[str]:
    names = DROPPED[table]
    if connection.vendor == "postgresql":
        return names
    return {name for name in names if not name.endswith("_like")}


@pytest.mark.django_db(transaction=True)
def test_the_redundant_indexes_come_back_when_reversed_and_go_again():
    for table in DROPPED:
        assert not indexes(table) & DROPPED[table]
    assert "cmt_invitation_idx" in indexes("commitments_commitment")
    keys = {table: foreign_keys(table) for table in DROPPED}
    assert {"assigner_id", "assignee_id", "invitation_id"} <= keys["commitments_commitment"]
    assert "subject_type_id" in keys["audit_auditevent"]

    with schema_before(BEFORE):
        for table in DROPPED:
            assert dropped_here(table) <= indexes(table)
        assert "cmt_invitation_idx" not in indexes("commitments_commitment")

        migrate(latest())

        for table in DROPPED:
            assert not indexes(table) & DROPPED[table]
            assert foreign_keys(table) == keys[table]
        assert "cmt_invitation_idx" in indexes("commitments_commitment")
