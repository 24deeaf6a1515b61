from __future__ import annotations

import pytest
from django.core import mail

from lib import jobs
from tests.harness.webhooks import Receiver
from webhooks.services import webhook_endpoint_create


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    settings.WEBHOOK_TIMEOUT = 2
    settings.WEBHOOK_RETRY_WINDOW = 24 * 3600
    settings.WEBHOOK_ROTATION_OVERLAP = 24 * 3600
    settings.DELIVERY_LEASE_SECONDS = 120
    settings.OUTBOX_REQUEUE_AFTER = 120
    mail.outbox = []


@pytest.fixture
def broker(monkeypatch) -> list:
    """What the code queues (task name, argument), instead of the broker."""
    sent: list = []

    def enqueue(task, *args, **kwargs):
        sent.append((task.name, args[0]))
        return True

    monkeypatch.setattr(jobs, "enqueue", enqueue)
    return sent


@pytest.fixture
def receiver():
    with Receiver() as fake:
        yield fake


@pytest.fixture
def endpoint_and_secret(db, assigner, receiver):
    return webhook_endpoint_create(user=assigner, external_system="jira", url=receiver.url)


@pytest.fixture
def endpoint(endpoint_and_secret):
    return endpoint_and_secret[0]


@pytest.fixture
def secret(endpoint_and_secret):
    return endpoint_and_secret[1]
