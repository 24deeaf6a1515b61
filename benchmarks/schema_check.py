"""Schemathesis against the live server: the fault run's `schemathesis` part
(benchmarks/faults.py, docs/faults.md).

Loads the OpenAPI document the running server serves (/api-reference/
openapi.json), generates valid and invalid requests to each bearer-token
operation (/api/v1/..., the tracker hooks aside: they take a signature, not a
token), sends them over loopback with a real token, and holds each answer to
the document with the checks the in-process tests use (tests/harness/
openapi.py: no 5xx, a documented status, content type, headers and body, and
two that catch the schema and the server disagreeing on what is valid: a
request the document allows must not get 400, `positive_data_acceptance`,
where 401, 403, 404 and 409 are fine; one it forbids must not succeed,
`negative_data_rejection`). Every other valid inbox request names the
token's own user as assigner and the stage's assignee, so it can get past
the lookups to 201 (generated e-mails name nobody: 403 or 404). Unlike the
tests it does not stop at the first failure: it counts them.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter

SERVER_ERROR = "ServerError"
KEPT = 5  # failures kept in full for the report, per kind


def run_schemathesis(
    port: int, token: str, users: tuple[str, str], examples: int, seed: int | None = None
) -> dict:
    """`examples` generated requests per operation and generation mode
    (positive, negative), plus the document's own examples. Returns the
    figures: operations, calls, server errors, mismatches (by kind) and a few
    failures in full."""
    import schemathesis
    from schemathesis import GenerationMode

    seed = secrets.randbelow(2**32) if seed is None else seed
    base_url = f"http://127.0.0.1:{port}"
    operations = bearer_operations(
        schemathesis.openapi.from_url(f"{base_url}/api-reference/openapi.json")
    )
    tally = Tally()
    started = time.monotonic()
    caller = Caller(base_url, token, users, tally)
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            explore(operation, mode, caller, examples, seed)
    return {
        "seed": seed,
        "examples_per_operation_and_mode": examples,
        "operations": sorted(name_of(op) for op in operations),
        **tally.figures(),
        "seconds": round(time.monotonic() - started, 1),
    }


def name_of(operation) -> str:
    return f"{operation.method.upper()} {operation.path}"


def bearer_operations(schema) -> list:
    """The document's bearer-token operations (/api/v1/..., the tracker
    hooks aside); the inbox and the sync must be among them."""
    operations = [
        op
        for op in (result.ok() for result in schema.get_all_operations())
        if op.path.startswith("/api/v1/") and not op.path.startswith("/api/v1/hooks/")
    ]
    missing = {"POST /api/v1/inbox", "POST /api/v1/sync"} - {name_of(op) for op in operations}
    if missing:
        raise SystemExit(f"The served document lacks {sorted(missing)}.")
    return operations


class Tally:
    """The calls, the answers by status, the failures by kind, and the
    first KEPT failures of each kind in full."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.statuses: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.failed_calls = {"server_errors": 0, "mismatches": 0, "no_answer": 0}
        self.kept: list[dict] = []

    def no_answer(self, error: OSError) -> None:
        self.failed_calls["no_answer"] += 1
        self.kinds[f"no answer: {type(error).__name__}"] += 1

    def note(self, operation, mode, case, response, failures) -> None:
        server = [f for f in failures if type(f).__name__ == SERVER_ERROR]
        other = [f for f in failures if type(f).__name__ != SERVER_ERROR]
        self.failed_calls["server_errors"] += bool(server)
        self.failed_calls["mismatches"] += bool(other)
        for failure in failures:
            kind = type(failure).__name__
            self.kinds[kind] += 1
            if sum(1 for k in self.kept if k["kind"] == kind) < KEPT:
                self.kept.append(
                    {
                        "kind": kind,
                        "title": failure.title,
                        "message": (failure.message or "")[:500],
                        "operation": name_of(operation),
                        "mode": mode.value,
                        "status": response.status_code if response is not None else None,
                        "media_type": case.media_type,
                        "body": repr(case.body)[:300],
                        "answer": response.text[:300] if response is not None else None,
                    }
                )

    def figures(self) -> dict:
        return {
            "calls": sum(self.calls.values()),
            "calls_by_operation": dict(self.calls),
            "statuses": dict(sorted(self.statuses.items())),
            "server_errors": self.failed_calls["server_errors"],
            "mismatches": self.failed_calls["mismatches"],
            "no_answer": self.failed_calls["no_answer"],
            "failures_by_kind": dict(self.kinds),
            "failures": self.kept,
        }


class Caller:
    """Sends one generated case with the stage's token and holds the answer to
    the document, noting what fails instead of stopping at it."""

    def __init__(self, base_url: str, token: str, users: tuple[str, str], tally: Tally) -> None:
        self.base_url, self.users, self.tally = base_url, users, tally
        self.headers = {"Authorization": f"Bearer {token}"}

    def __call__(self, operation, mode, case) -> None:
        from schemathesis import GenerationMode
        from schemathesis.core.failures import Failure, FailureGroup

        from tests.harness.openapi import CHECKS

        name = name_of(operation)
        self.tally.calls[name] += 1
        if (
            mode is GenerationMode.POSITIVE
            and name == "POST /api/v1/inbox"
            and isinstance(case.body, dict)
            and self.tally.calls[name] % 2
        ):
            assigner, assignee = self.users
            case.body = {**case.body, "assignerEmail": assigner, "assigneeEmail": assignee}
        # The stage's token, unless the case is about the token itself (a
        # negative one that leaves the header out or spoils it: put back, it
        # would be answered 200 and counted as a mismatch).
        headers = {} if _mutates_authorization(case) else self.headers
        try:
            response = case.call(base_url=self.base_url, headers=headers, timeout=30)
        except OSError as error:  # requests' errors are OSErrors
            self.tally.no_answer(error)
            return
        self.tally.statuses[str(response.status_code)] += 1
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except FailureGroup as group:
            self.tally.note(operation, mode, case, response, list(group.exceptions))
        except Failure as failure:
            self.tally.note(operation, mode, case, response, [failure])


def _mutates_authorization(case) -> bool:
    """Whether a negative case's mutations take out or change the
    Authorization header (schemathesis's case metadata)."""
    data = getattr(getattr(getattr(case, "meta", None), "phase", None), "data", None)
    for mutation in getattr(data, "mutations", None) or ():
        if str(getattr(mutation, "parameter_location", "")).lower().endswith("header") and any(
            str(name).lower() == "authorization"
            for name in (mutation.parameter, mutation.original_value)
        ):
            return True
    return False


def explore(operation, mode, caller: Caller, examples: int, seed: int) -> None:
    """Hypothesis's run of one operation in one generation mode: the
    document's examples, then `examples` generated cases, from `seed`."""
    from hypothesis import HealthCheck, Phase, given
    from hypothesis import seed as hypothesis_seed
    from hypothesis import settings as hypothesis_settings

    @hypothesis_seed(seed)
    @given(case=operation.as_strategy(generation_mode=mode))
    @hypothesis_settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case) -> None:
        caller(operation, mode, case)

    run()


def summarize_schemathesis(result: dict) -> str:
    lines = [
        f"schemathesis (live server, seed {result['seed']}, "
        f"{result['examples_per_operation_and_mode']} examples per operation and mode, "
        f"{result['seconds']} s): operations {', '.join(result['operations'])}",
        f"  calls {result['calls']} ({result['calls_by_operation']}); answers "
        + ", ".join(f"{k}: {v}" for k, v in result["statuses"].items()),
        f"  server errors (5xx) {result['server_errors']}, calls with a schema mismatch "
        f"{result['mismatches']}, no answer {result['no_answer']}",
    ]
    for failure in result["failures"]:
        lines.append(
            f"  {failure['kind']} ({failure['operation']}, {failure['mode']}, status "
            f"{failure['status']}): {failure['title']}; body {failure['body']}"
        )
    return "\n".join(lines)
