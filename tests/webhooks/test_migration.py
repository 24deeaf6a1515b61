"""webhooks 0002: endpoint URLs stored in plaintext by the code before it are
encrypted in place, read back unchanged, and decrypted again when the
migration is reversed."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from lib.crypto import decrypt_str
from tests.harness.migrations import migrate_back, newest

BEFORE = [("webhooks", "0001_webhook_endpoints_and_deliveries")]
URL = "https://hooks.example.com/hook/credential-in-the-path?key=also-secret"


def migrate(targets) -> None:
    MigrationExecutor(connection).migrate(targets)


def latest():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def raw_urls() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT url FROM webhooks_webhookendpoint ORDER BY external_system")
        return [row[0] for row in cursor.fetchall()]


@pytest.fixture
def old_schema():
    """The database as the code before 0002 made it, and its models; the
    newest schema again after the test, whatever happens."""
    migrate_back(BEFORE)
    loader = MigrationExecutor(connection).loader
    nodes = [n for n in loader.graph.leaf_nodes() if n[0] != "webhooks"]
    try:
        yield loader.project_state([*nodes, BEFORE[0]]).apps
    finally:
        newest()


@pytest.mark.django_db(transaction=True)
def test_existing_plaintext_urls_are_encrypted_and_read_back_unchanged(old_schema):
    user = old_schema.get_model("accounts", "User").objects.create(email="lead@example.com")
    endpoints = old_schema.get_model("webhooks", "WebhookEndpoint").objects
    endpoints.create(user=user, external_system="jira", url=URL, secret="")
    endpoints.create(user=user, external_system="linear", url=URL + "&b=2", secret="")
    assert raw_urls() == [URL, URL + "&b=2"]  # what the old code stored

    migrate(latest())

    from webhooks.models import WebhookEndpoint

    stored = raw_urls()
    assert all("credential-in-the-path" not in value for value in stored)
    assert [decrypt_str(value) for value in stored] == [URL, URL + "&b=2"]
    assert list(
        WebhookEndpoint.objects.order_by("external_system").values_list("url", flat=True)
    ) == [
        URL,
        URL + "&b=2",
    ]

    migrate(BEFORE)  # and back: plaintext again, for the code before
    assert raw_urls() == [URL, URL + "&b=2"]


@pytest.mark.django_db(transaction=True)
def test_endpoints_from_before_the_choice_of_events_keep_exactly_the_four():
    """webhooks 0004 (issue 26, point 7): every endpoint there was receives
    what it received before, the contract's four events, and nothing new."""
    before = [("webhooks", "0003_attempt_outcome_shared")]
    migrate_back(before)
    try:
        loader = MigrationExecutor(connection).loader
        nodes = [n for n in loader.graph.leaf_nodes() if n[0] != "webhooks"]
        old = loader.project_state([*nodes, before[0]]).apps
        user = old.get_model("accounts", "User").objects.create(email="lead@example.com")
        endpoints = old.get_model("webhooks", "WebhookEndpoint").objects
        endpoints.create(user=user, external_system="jira", url=URL, secret="")
        endpoints.create(user=user, external_system="linear", url=URL, secret="")
    finally:
        migrate(latest())

    from webhooks.models import WebhookEndpoint

    four = [
        "commitment.activated",
        "commitment.refused",
        "commitment.renegotiated",
        "commitment.completed",
    ]
    assert [e.events for e in WebhookEndpoint.objects.order_by("external_system")] == [four, four]
    assert all(e.chosen_events == [] for e in WebhookEndpoint.objects.all())
