"""lib.supervise: a child that could not start stops everything, with its code.
(That a killed worker is started again and a SIGTERM stops them all is proved
with real workers, tests/relay/test_worker.py.)"""

from __future__ import annotations

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
