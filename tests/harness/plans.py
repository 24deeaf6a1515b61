"""PostgreSQL's plans, for the tests that check which indexes a statement
reads, or how many rows it visits: `EXPLAIN (FORMAT JSON)` of a statement as
Django ran it (its parameters bound, as `CaptureQueriesContext` records it),
and its nodes."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

from django.db import connection
from django.test.utils import CaptureQueriesContext


def statements_on(table: str, call: Callable[[], object]) -> list[str]:
    """The SQL of each statement `call` ran that names `table` (as Django
    ran it, its values bound: what `plan_of` takes); at least one."""
    with CaptureQueriesContext(connection) as captured:
        call()
    statements = [q["sql"] for q in captured.captured_queries if f'"{table}"' in q["sql"]]
    assert statements, f"nothing ran on {table}"
    return statements


def plan_of(sql: str, *, analyze: bool = False) -> dict:
    """The root node of the plan of `sql` (not run: EXPLAIN without ANALYZE;
    `analyze`: run, with each node's actual rows)."""
    options = "ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON"
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN ({options}) " + sql)
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


def rows_visited(plan: dict, table: str) -> int:
    """The rows of `table` the plan (`plan_of(..., analyze=True)`) fetched:
    those its scans of the table returned and those they filtered out, over
    all their loops."""
    return sum(
        (
            node["Actual Rows"]
            + node.get("Rows Removed by Filter", 0)
            + node.get("Rows Removed by Index Recheck", 0)
        )
        * node["Actual Loops"]
        for node in plan_nodes(plan)
        if node.get("Relation Name") == table
    )
