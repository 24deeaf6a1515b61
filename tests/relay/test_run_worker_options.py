"""run_worker's options refused before anything starts: a worker may lower
its own CPU priority but not raise it without privileges, so a negative
`--outbox-nice` would fail each time the supervisor started the worker."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command


@pytest.mark.parametrize("value", ["-3", "five"])
def test_an_outbox_nice_below_zero_or_not_a_number_is_refused(value):
    with pytest.raises(CommandError, match="give a whole number, 0 or more"):
        call_command("run_worker", f"--outbox-nice={value}")
