"""run_worker's options: refused before anything starts (a worker may lower
its own CPU priority but not raise it without privileges, so a negative
`--outbox-nice` would fail each time the supervisor started the worker),
and what the supervisor is told of the outbox worker's priority."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from tests.harness.run_worker import supervisor_spec


@pytest.mark.parametrize("value", ["-3", "five"])
def test_an_outbox_nice_below_zero_or_not_a_number_is_refused(value):
    with pytest.raises(CommandError, match="give a whole number, 0 or more"):
        call_command("run_worker", f"--outbox-nice={value}")


def test_the_outbox_worker_is_made_idle_unless_told_not_to(monkeypatch, settings):
    settings.WORKER_OUTBOX_IDLE = True
    made = supervisor_spec(monkeypatch, "--no-beat")
    (first, _), (second, _) = made["children"]
    assert made["idle"] == [first]
    assert made["nice"] == {first: settings.WORKER_OUTBOX_NICE}
    assert "webhooks" in second

    assert supervisor_spec(monkeypatch, "--no-beat", "--no-outbox-idle")["idle"] == []
