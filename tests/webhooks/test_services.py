"""Registering, changing, pausing, deleting and rotating endpoints: the secret
is generated, shown once and encrypted at rest; URLs are checked at
registration for a clear error; every change is on the audit trail."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection

from audit.models import AuditEvent
from audit.services import Actor
from lib import outbound
from webhooks.errors import WebhookEndpointExists, WebhookError, WebhookUrlRefused
from webhooks.models import WebhookEndpoint
from webhooks.services import (
    webhook_endpoint_create,
    webhook_endpoint_delete,
    webhook_endpoint_pause,
    webhook_endpoint_resume,
    webhook_endpoint_rotate_secret,
    webhook_endpoint_update,
)

pytestmark = pytest.mark.django_db

URL = "https://hooks.example.com/commitments"


@pytest.fixture
def public_dns(monkeypatch):
    """hooks.example.com resolves to a public address (no real DNS)."""
    real = outbound.socket.getaddrinfo

    def fake(host, port, *args, **kwargs):
        if host == "hooks.example.com":
            return [(2, 1, 6, "", ("93.184.216.34", port))]
        if host == "internal.example.com":
            return [(2, 1, 6, "", ("10.0.0.5", port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(outbound.socket, "getaddrinfo", fake)


def test_creating_an_endpoint_returns_a_whsec_secret_stored_encrypted(public_dns, assigner):
    endpoint, secret = webhook_endpoint_create(
        user=assigner, external_system=" jira ", url=f"  {URL} "
    )

    assert re.fullmatch(r"whsec_[A-Za-z0-9+/]{43}=", secret)
    assert endpoint.external_system == "jira"
    assert endpoint.url == URL
    assert WebhookEndpoint.objects.get().secret == secret
    with connection.cursor() as cursor:
        cursor.execute("SELECT secret FROM webhooks_webhookendpoint")
        [(stored,)] = cursor.fetchall()
    assert secret not in stored and "whsec_" not in stored
    event = AuditEvent.objects.get(action="webhook_endpoint_created")
    assert event.user == assigner
    assert "whsec_" not in str(event.payload)


def test_one_endpoint_per_user_and_system(public_dns, assigner, assignee):
    webhook_endpoint_create(user=assigner, external_system="jira", url=URL)
    with pytest.raises(WebhookEndpointExists) as refused:
        webhook_endpoint_create(user=assigner, external_system="jira", url=URL)
    assert refused.value.field == "external_system"
    webhook_endpoint_create(user=assigner, external_system="linear", url=URL)
    webhook_endpoint_create(user=assignee, external_system="jira", url=URL)
    assert WebhookEndpoint.objects.count() == 3


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.example.com/x",
        "https://127.0.0.1/x",
        "https://10.0.0.1/x",
        "https://169.254.169.254/latest",
        "https://[::1]/x",
        "https://[::ffff:127.0.0.1]/x",
        "https://internal.example.com/x",
        "ftp://hooks.example.com/x",
        "not a url",
    ],
)
def test_a_url_the_guard_refuses_is_a_clear_error(public_dns, assigner, settings, url):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    with pytest.raises(WebhookUrlRefused) as refused:
        webhook_endpoint_create(user=assigner, external_system="jira", url=url)
    assert refused.value.field == "url"
    assert refused.value.message
    assert not WebhookEndpoint.objects.exists()


def test_an_empty_system_name_is_refused(public_dns, assigner):
    with pytest.raises(WebhookError) as refused:
        webhook_endpoint_create(user=assigner, external_system="  ", url=URL)
    assert refused.value.field == "external_system"


def test_changing_the_url_is_checked_and_audited(public_dns, assigner, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    endpoint, _ = webhook_endpoint_create(user=assigner, external_system="jira", url=URL)
    with pytest.raises(WebhookUrlRefused):
        webhook_endpoint_update(endpoint=endpoint, url="https://10.1.2.3/")
    webhook_endpoint_update(endpoint=endpoint, url=URL + "/v2")
    endpoint.refresh_from_db()
    assert endpoint.url == URL + "/v2"
    changed = AuditEvent.objects.get(action="webhook_endpoint_changed")
    # Where from and to, as scheme and host, and that it changed: never the URL.
    assert changed.payload == {
        "url": {"old": "https://hooks.example.com/…", "new": "https://hooks.example.com/…"},
        "changed": True,
    }


def test_pause_resume_and_delete_are_audited(public_dns, assigner, staff):
    endpoint, _ = webhook_endpoint_create(user=assigner, external_system="jira", url=URL)
    webhook_endpoint_pause(endpoint=endpoint)
    assert WebhookEndpoint.objects.get().is_paused
    webhook_endpoint_resume(endpoint=endpoint)
    assert not WebhookEndpoint.objects.get().is_paused
    webhook_endpoint_delete(endpoint=endpoint, actor=Actor.for_user(staff))
    assert not WebhookEndpoint.objects.exists()
    actions = list(
        AuditEvent.objects.filter(action__startswith="webhook_").values_list("action", "user")
    )
    assert actions == [
        ("webhook_endpoint_created", assigner.pk),
        ("webhook_endpoint_paused", assigner.pk),
        ("webhook_endpoint_resumed", assigner.pk),
        ("webhook_endpoint_deleted", staff.pk),
    ]


def test_rotation_keeps_the_old_secret_for_24_hours(public_dns, assigner):
    endpoint, old = webhook_endpoint_create(user=assigner, external_system="jira", url=URL)
    now = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)

    new = webhook_endpoint_rotate_secret(endpoint=endpoint, now=now)

    endpoint.refresh_from_db()
    assert new != old and new.startswith("whsec_")
    assert endpoint.secret == new
    assert endpoint.previous_secret == old
    assert endpoint.previous_secret_until == now + dt.timedelta(hours=24)
    assert endpoint.signing_secrets(now) == [new, old]
    assert endpoint.signing_secrets(now + dt.timedelta(hours=24)) == [new]
    event = AuditEvent.objects.get(action="webhook_secret_rotated")
    assert "whsec_" not in str(event.payload)
