"""Fixtures for the gather tests: the fake provider every gather test talks to."""

from __future__ import annotations

import pytest

from tests.harness.fake_provider import FakeProvider


@pytest.fixture
def fake_provider(settings):
    """A fake OpenAI/Anthropic server on loopback; settings.OPENAI_BASE_URL and
    settings.ANTHROPIC_BASE_URL point at it for the test. See tests/harness/fake_provider.py."""
    provider = FakeProvider().start()
    settings.OPENAI_BASE_URL = provider.openai_base_url
    settings.ANTHROPIC_BASE_URL = provider.anthropic_base_url
    try:
        yield provider
    finally:
        provider.stop()
