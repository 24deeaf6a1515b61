"""lib.supervise: a child that could not start stops everything, with its code;
a child given a nice runs at that much lower CPU priority, and one made
idle under Linux's idle scheduling policy. (That a killed
worker is started again and a SIGTERM stops them all is proved with real
workers, tests/relay/test_worker.py.)"""

from __future__ import annotations

import os
import sys

import pytest

from lib.supervise import Supervisor

pytestmark = pytest.mark.processes


def test_a_child_that_exits_with_an_error_at_its_first_start_ends_the_run_with_its_code():
    supervisor = Supervisor.of(
        [
            ("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"]),
            ("broken", [sys.executable, "-c", "raise SystemExit(3)"]),
        ],
        stop_timeout=10,
    )

    assert supervisor.run() == 3
    # The other child was stopped, not left behind.
    assert all(child.proc is None for child in supervisor.children)
    assert [child.starts for child in supervisor.children] == [1, 1]


def _as_the_children_report(tmp_path, expression: str, **options) -> tuple[int, int]:
    """Run two children, "bulk" and "line", under a supervisor given
    `options`; each writes what `expression` (of `os`) is in it. Returns
    (bulk's, line's)."""
    report = f"import os, pathlib, sys; pathlib.Path(sys.argv[1]).write_text(str({expression}))"
    supervisor = Supervisor.of(
        [
            ("bulk", [sys.executable, "-c", report, str(tmp_path / "bulk")]),
            ("line", [sys.executable, "-c", report, str(tmp_path / "line")]),
            # Exits with an error at its first start: ends the run once the
            # other two have had time to write.
            ("end", [sys.executable, "-c", "import time; time.sleep(2); raise SystemExit(4)"]),
        ],
        stop_timeout=10,
        **options,
    )
    assert supervisor.run() == 4
    return int((tmp_path / "bulk").read_text()), int((tmp_path / "line").read_text())


def test_a_child_given_a_nice_runs_at_that_much_lower_priority_and_the_others_do_not(tmp_path):
    ours = os.getpriority(os.PRIO_PROCESS, 0)

    bulk, line = _as_the_children_report(
        tmp_path, "os.getpriority(os.PRIO_PROCESS, 0)", nice={"bulk": 5}
    )

    assert bulk == min(ours + 5, 19)
    assert line == ours


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux's idle policy")
def test_a_child_made_idle_runs_under_the_idle_policy_and_the_others_do_not(tmp_path):
    bulk, line = _as_the_children_report(tmp_path, "os.sched_getscheduler(0)", idle=["bulk"])

    assert bulk == os.SCHED_IDLE
    assert line == os.sched_getscheduler(0) != os.SCHED_IDLE
