"""The relay's tests' fixtures."""

from __future__ import annotations

import pytest

from relay.listener import Relay


@pytest.fixture
def relay():
    """Start relays (`relay()` -> a started Relay thread); each is stopped,
    and must have ended, after the test."""
    started: list[Relay] = []

    def start() -> Relay:
        thread = Relay()
        thread.start()
        started.append(thread)
        return thread

    yield start
    for thread in started:
        thread.stop()
        assert not thread.is_alive()
