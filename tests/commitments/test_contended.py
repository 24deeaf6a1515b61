"""A move that loses its compare-and-set every time it is made
(commitments.services.ATTEMPTS) raises Contended and writes nothing: the API
answers `503 busy` with Retry-After (a 5xx, which the contract tells clients
to retry), a page goes back saying to try again (docs/architecture.md, "The
state machine"). A move that loses fewer times than that is made."""

from __future__ import annotations

import dataclasses
from typing import Any

import psycopg
import pytest
from django.contrib.messages import get_messages
from django.db import connection

import lib.db
from audit.models import AuditEvent
from audit.services import Actor
from commitments import services
from commitments.errors import Contended
from commitments.models import Commitment, OutboxEvent, Status
from tests.harness.api import SYNC, assert_envelope, mint, post_json


def _active(assigner, assignee) -> Commitment:
    c = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Busy",
        deadline=None,
        external_system="jira",
        external_id="BUSY-1",
    )
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=c.pk, terms_version=1)
    return c


def _rows(c: Commitment) -> tuple[int, int, str]:
    c.refresh_from_db()
    return AuditEvent.objects.for_object(c).count(), OutboxEvent.objects.count(), c.status


class Lost:
    """Once `armed`, every compare-and-set of a move matches no row while the
    row still allows the move (as when another write that left it allowed
    won): the real statement, with one condition no row meets. `attempts`:
    how many were made."""

    def __init__(self) -> None:
        self.armed = False
        self.attempts = 0

    def __call__(self, decide, **kwargs: Any):
        if self.armed:
            self.attempts += 1
            decide = nowhere(decide)
        return lib.db.write_decided(decide, **kwargs)


def nowhere(decide: Any) -> Any:
    """`decide` (a lib.db.Later, as the moves give it, or a Decide) with one
    more condition that no row meets."""
    if isinstance(decide, lib.db.Later):
        build = decide.build

        def built(*inputs: Any) -> Any:
            made, where = build(*inputs)
            return nowhere(made), where

        return dataclasses.replace(decide, key=("nowhere", decide.key), build=built)
    return dataclasses.replace(decide, queryset=decide.queryset.filter(status="Nowhere"))


@pytest.fixture
def always_lost(monkeypatch) -> Lost:
    lost = Lost()
    monkeypatch.setattr(services, "write_decided", lost)
    return lost


def test_a_sync_that_loses_every_attempt_is_503_busy_with_retry_after(
    client, assigner, assignee, always_lost
):
    c = _active(assigner, assignee)
    before = _rows(c)
    always_lost.armed = True

    response = post_json(
        client,
        SYNC,
        {"externalSystem": "jira", "externalId": "BUSY-1", "status": "Completed"},
        token=mint(assigner),
    )

    body = assert_envelope(response, 503, "busy", details=False)
    assert body["message"] == "It is changing too often at once; try again in a moment."
    assert response["Retry-After"] == "1"
    assert always_lost.attempts == services.ATTEMPTS
    assert _rows(c) == before == (2, 2, Status.ACTIVE)


def test_a_page_move_that_loses_every_attempt_goes_back_saying_to_try_again(
    client, assigner, assignee, always_lost
):
    c = _active(assigner, assignee)
    client.force_login(assignee)
    before = _rows(c)
    always_lost.armed = True

    response = client.post(f"/commitments/{c.pk}/complete")

    assert response.status_code == 302
    assert response["Location"] == f"/commitments/{c.pk}"
    said = [str(m) for m in get_messages(response.wsgi_request)]
    assert said == ["It is changing too often at once; try again in a moment."]
    assert _rows(c) == before


# --- a real writer that always wins (PostgreSQL: a second connection) -----------------


@pytest.fixture
def other_writer(monkeypatch):
    """Before each compare-and-set, another connection changes the row (a
    write that leaves the move allowed) and commits: the move's UPDATE,
    which requires the version it read, matches nothing. `rivals[0]`: how
    many more times it does so (then it stops; 0 at first)."""
    settings = connection.settings_dict
    other = psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        password=settings["PASSWORD"] or None,
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
        autocommit=True,
    )
    rivals = [0]
    real = lib.db.write_decided

    def after_a_rival(decide, **kwargs: Any):
        if rivals[0] > 0:
            rivals[0] -= 1
            # The test's one commitment.
            other.execute("UPDATE commitments_commitment SET updated_at = updated_at")
        return real(decide, **kwargs)

    monkeypatch.setattr(services, "write_decided", after_a_rival)
    yield rivals
    other.close()


@pytest.mark.postgres
def test_a_move_beaten_by_a_real_writer_every_time_raises_contended_and_writes_nothing(
    assigner, assignee, other_writer, monkeypatch
):
    monkeypatch.setattr(services, "ATTEMPTS", 3)
    c = _active(assigner, assignee)
    before = _rows(c)
    other_writer[0] = 10**6

    with pytest.raises(Contended):
        services.commitment_complete(actor=Actor.for_user(assignee), commitment_id=c.pk)

    assert other_writer[0] == 10**6 - 3  # beaten on each of the three attempts
    assert _rows(c) == before


@pytest.mark.postgres
def test_a_move_beaten_fewer_times_than_the_limit_is_made(
    assigner, assignee, other_writer, monkeypatch
):
    monkeypatch.setattr(services, "ATTEMPTS", 3)
    c = _active(assigner, assignee)
    audit, outbox, _ = _rows(c)
    other_writer[0] = 2

    result = services.commitment_complete(actor=Actor.for_user(assignee), commitment_id=c.pk)

    assert result.changed and other_writer[0] == 0
    assert _rows(c) == (audit + 1, outbox + 1, Status.COMPLETED)
