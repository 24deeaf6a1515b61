"""PostgreSQL's plans, for the tests that check which indexes a statement
reads: `EXPLAIN (FORMAT JSON)` of a statement as Django ran it (its
parameters bound, as `CaptureQueriesContext` records it), and its nodes."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.db import connection


def plan_of(sql: str) -> dict:
    """The root node of the plan of `sql` (not run: EXPLAIN without ANALYZE)."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql)
        (document,) = cursor.fetchone()
    return (json.loads(document) if isinstance(document, str) else document)[0]["Plan"]


def plan_nodes(plan: dict) -> Iterator[dict]:
    """Every node of the plan, the root first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def indexes_used(plan: dict) -> set[str]:
    """The indexes the plan reads."""
    return {node["Index Name"] for node in plan_nodes(plan) if "Index Name" in node}
