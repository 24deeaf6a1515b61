"""The read API's list is served by an index for every filter (docs/api.md,
"GET /api/v1/commitments"): on PostgreSQL, with 10,000 commitments and fresh
statistics, the plan of each query the list runs reads `commitments_commitment`
through an index, never by a sequential scan."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from commitments import selectors
from commitments.models import Commitment, Status
from tests.harness.commitments import many_commitments
from tests.harness.plans import indexes_used, plan_nodes, plan_of

pytestmark = pytest.mark.postgres

TABLE = Commitment._meta.db_table


def _plans_of_the_list(**filters) -> list[dict]:
    with CaptureQueriesContext(connection) as captured:
        selectors.commitment_page_for(limit=50, **filters)
    plans = [
        plan_of(query["sql"])
        for query in captured.captured_queries
        if f'FROM "{TABLE}"' in query["sql"]
    ]
    assert plans, "the list ran no query on the commitments"
    return plans


@pytest.fixture
def crowded(make_user):
    """10,000 commitments between two people and 2,000 of others, analysed."""
    me, colleague = make_user("me@example.com"), make_user("colleague@example.com")
    many_commitments(me, colleague, 10_000)
    many_commitments(make_user("a@example.com"), make_user("b@example.com"), 2_000)
    with connection.cursor() as cursor:
        cursor.execute(f'ANALYZE "{TABLE}"')
    return me


def _filters(me) -> dict[str, dict]:
    last = Commitment.objects.filter(assigner=me).order_by("-updated_at", "-id")[40]
    return {
        "none": {},
        "assigner": {"role": "assigner"},
        "assignee": {"role": "assignee"},
        "status": {"status": Status.ACTIVE},
        "assigner+status": {"role": "assigner", "status": Status.COMPLETED},
        "assignee+status": {"role": "assignee", "status": Status.PENDING_HANDSHAKE},
        "reference": {"external_system": "jira", "external_id": "OPS-300"},
        "externalSystem": {"external_system": "jira"},
        "externalId": {"external_id": "OPS-300"},
        "updatedSince": {"updated_since": timezone.now() - dt.timedelta(seconds=1)},
        "cursor": {"after": (last.updated_at, last.pk)},
    }


def test_every_filter_of_the_list_is_served_by_an_index(crowded):
    report = {}
    for name, filters in _filters(crowded).items():
        for plan in _plans_of_the_list(user=crowded, **filters):
            scans = [node for node in plan_nodes(plan) if node.get("Relation Name") == TABLE]
            kinds = {node["Node Type"] for node in scans}
            assert "Seq Scan" not in kinds, (name, json.dumps(plan, indent=1))
            assert kinds & {"Index Scan", "Index Only Scan", "Bitmap Heap Scan"}, (name, kinds)
            report.setdefault(name, set()).update(indexes_used(plan))
    # Each side's plain list walks its own (updated_at, id) index, in order.
    assert "cmt_assigner_changed_idx" in report["assigner"], report
    assert "cmt_assignee_changed_idx" in report["assignee"], report
    print({name: sorted(found) for name, found in report.items()})
