"""PostgreSQL binds the parameters and keeps the API's statements prepared
(DB_PREPARED_STATEMENTS, on by default; docs/configuration.md): a completing
sync's token lookup and its one writing statement are planned once per
connection, not at every call (issue 29; docs/benchmarks.md, "Planned once
per connection")."""

from __future__ import annotations

import pytest
from django.db import connection

from commitments.models import Commitment, Status
from tests.harness.api import SYNC, mint, post_json
from tests.harness.commitments import tracked_active
from tests.harness.settings import settings_for

POSTGRES = "postgres://postgres@127.0.0.1:5432/commitments"


def test_statements_are_bound_by_the_server_and_prepared_by_default(tmp_path):
    values = settings_for(tmp_path, DATABASE_URL=POSTGRES, DB_PREPARED_STATEMENTS=None)
    options = values["DATABASES"]["default"]["OPTIONS"]

    assert options["server_side_binding"] is True
    assert options["prepare_threshold"] == 2


def test_behind_an_old_pooler_the_binding_is_djangos_own(tmp_path):
    values = settings_for(tmp_path, DATABASE_URL=POSTGRES, DB_PREPARED_STATEMENTS="0")
    options = values["DATABASES"]["default"].get("OPTIONS", {})

    assert "server_side_binding" not in options
    assert "prepare_threshold" not in options


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall()]


@pytest.mark.django_db
def test_a_completing_syncs_statements_are_prepared_on_the_connection(client, assigner, assignee):
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's")
    token = mint(assigner)
    for n in range(3):
        tracked_active(assigner, assignee, f"OPS-{n}")
    before = _prepared()

    for n in range(3):
        body = {"externalSystem": "jira", "externalId": f"OPS-{n}", "status": "Completed"}
        response = post_json(client, SYNC, body, token=token)
        assert response.status_code == 200, response.content
        assert response.json()["changed"] is True

    new = [statement for statement in _prepared() if statement not in before]
    writes = [s for s in new if s.startswith('WITH w0 AS (UPDATE "commitments_commitment"')]
    lookups = [s for s in new if s.startswith('SELECT "integrations_apitoken"."id"')]
    assert len(writes) == 1, new  # one statement for the three calls, its values bound
    assert "$1" in writes[0]
    assert "OPS-" not in writes[0]
    assert len(lookups) == 1, new
    assert Commitment.objects.filter(status=Status.COMPLETED).count() == 3
