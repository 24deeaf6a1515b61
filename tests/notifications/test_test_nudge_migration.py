"""Migration notifications 0006 (test nudges, then "channel tests", leased): a waiting test
('queued') becomes lib.leasing's 'pending', so the sweep can find it; one a
dead worker had left 'sending' (no lease, nothing would ever finish it) is
failed with the reason."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.harness.migrations import migrate_back, newest

BEFORE = [("notifications", "0005_invitation_deliveries")]
AFTER = [("notifications", "0006_channel_test_lease")]


def migrate(targets) -> None:
    MigrationExecutor(connection).migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_waiting_tests_become_pending_and_stuck_ones_fail_with_the_reason():
    migrate_back(BEFORE)
    try:
        apps = MigrationExecutor(connection).loader.project_state(BEFORE).apps
        user = apps.get_model("accounts", "User").objects.create(email="knight@example.com")
        tests = apps.get_model("notifications", "ChannelTest").objects
        waiting = tests.create(user=user, status="queued").pk
        stuck = tests.create(user=user, status="sending").pk
        sent = tests.create(user=user, status="sent", detail="E-mail accepted it.").pk
        migrate(AFTER)
        apps = MigrationExecutor(connection).loader.project_state(AFTER).apps
        tests = apps.get_model("notifications", "ChannelTest").objects
        assert tests.get(pk=waiting).status == "pending"
        failed = tests.get(pk=stuck)
        assert failed.status == "failed"
        assert "stopped before sending" in failed.detail
        assert failed.finished_at is not None
        assert (tests.get(pk=sent).status, tests.get(pk=sent).detail) == (
            "sent",
            "E-mail accepted it.",
        )
    finally:
        newest()
