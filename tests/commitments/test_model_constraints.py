"""Rules the database itself holds, whatever code writes the rows."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from audit.services import Actor
from commitments import services
from commitments.errors import DuplicateExternalRef
from commitments.models import Commitment, Status

pytestmark = pytest.mark.django_db


def row(assigner, assignee, **extra) -> Commitment:
    fields = {"status": Status.PENDING_HANDSHAKE, "description": "Row"} | extra
    return Commitment.objects.create(assigner=assigner, assignee=assignee, **fields)


@pytest.mark.parametrize("mapping", [{"external_system": "jira"}, {"external_id": "OPS-1"}])
def test_the_external_pair_is_both_or_neither(mapping, assigner, assignee):
    with pytest.raises(IntegrityError), transaction.atomic():
        row(assigner, assignee, **mapping)
    assert not Commitment.objects.exists()


def test_the_same_assigner_cannot_map_the_same_external_ref_twice(assigner, assignee):
    row(assigner, assignee, external_system="jira", external_id="OPS-1")
    with pytest.raises(IntegrityError), transaction.atomic():
        row(assigner, assignee, external_system="jira", external_id="OPS-1")
    assert Commitment.objects.count() == 1


def test_two_assigners_may_track_the_same_external_ticket(assigner, assignee, outsider):
    row(assigner, assignee, external_system="jira", external_id="OPS-1")
    row(outsider, assignee, external_system="jira", external_id="OPS-1")
    # Rows without a mapping never collide.
    row(assigner, assignee)
    row(assigner, assignee)
    assert Commitment.objects.count() == 4


def test_an_unknown_status_is_refused_by_the_database(assigner, assignee):
    with pytest.raises(IntegrityError), transaction.atomic():
        row(assigner, assignee, status="Lost")


def test_the_service_turns_the_constraint_into_a_duplicate_error(assigner, assignee):
    def create():
        return services.commitment_create_pending(
            actor=Actor.for_user(assigner),
            assigner=assigner,
            assignee=assignee,
            description="Once",
            deadline=None,
            external_system="jira",
            external_id="OPS-1",
        )

    create()
    with pytest.raises(DuplicateExternalRef):
        create()
    assert Commitment.objects.count() == 1
