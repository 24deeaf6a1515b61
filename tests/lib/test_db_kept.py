"""lib.db's statements compiled once: `Prepared` (a read) and `Later` (a
decided write's querysets), each kept on PostgreSQL only when every
parameter is one of the caller's inputs, and answering as Django's own
statement would."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import lib.db
from commitments.models import Commitment, Status
from integrations.models import ApiToken
from lib.db import Decide, Later, Prepared, write_decided

pytestmark = pytest.mark.django_db


def token_of(user, name: str = "t") -> ApiToken:
    return ApiToken.objects.create(user=user, name=name, prefix="svc_x", digest=uuid.uuid4().hex)


def test_a_prepared_read_finds_what_the_orm_finds_with_its_related_row(assigner):
    token = token_of(assigner)
    read = Prepared(lambda digest: ApiToken.objects.select_related("user").filter(digest=digest))

    (found,) = read(token.digest)
    again = read(token.digest)  # the kept text, on PostgreSQL

    assert found.pk == token.pk and found.scopes == token.scopes
    assert found.created_at == ApiToken.objects.get(pk=token.pk).created_at
    with CaptureQueriesContext(connection) as queries:
        assert found.user.email == assigner.email  # loaded with it: no query
    assert len(queries) == 0
    assert [t.pk for t in again] == [token.pk]
    assert read("no such digest") == []


@pytest.mark.postgres
def test_a_prepared_read_is_kept_only_when_its_parameters_are_the_values():
    kept = Prepared(lambda digest: ApiToken.objects.filter(digest=digest))
    kept("a")
    assert kept._kept[(str,)] is not None

    # A value the build makes itself: never kept, and still answered.
    made = Prepared(lambda digest: ApiToken.objects.filter(digest=digest, name="constant"))
    assert made("a") == []
    assert made._kept[(str,)] is None


def active(assigner, assignee, ref: str) -> Commitment:
    return Commitment.objects.create(
        status=Status.ACTIVE,
        assigner=assigner,
        assignee=assignee,
        description="Ship it",
        external_system="jira",
        external_id=ref,
    )


def completing(key: object, ref: str, assigner, *, extra: str | None = None) -> Later:
    """Complete the commitment `ref` names, as a Later (`extra`: a value the
    build puts in that is not an input)."""

    def build(system, external_id, assigner_id, from_status, to_status):
        found = Commitment.objects.filter(
            external_system=system, external_id=external_id, assigner_id=assigner_id
        )
        queryset = found.filter(status__in=[from_status])
        if extra is not None:
            queryset = queryset.exclude(description=extra)
        return Decide(queryset, {"status": to_status}, found=found), []

    inputs = ("jira", ref, assigner.pk, Status.ACTIVE.value, Status.COMPLETED.value)
    return Later(key, inputs, build)


@pytest.mark.postgres
def test_a_later_is_kept_per_shape_and_writes_each_calls_own_values(assigner, assignee):
    first, second = active(assigner, assignee, "A-1"), active(assigner, assignee, "A-2")
    key = ("test", uuid.uuid4())

    one = write_decided(completing(key, "A-1", assigner))
    two = write_decided(completing(key, "A-2", assigner))
    replay = write_decided(completing(key, "A-2", assigner))

    assert lib.db._LATER[(key, (str, str, uuid.UUID, str, str))] is not None
    assert (one.row.pk, two.row.pk) == (first.pk, second.pk)
    # Refused, and the row read by the same statement:
    assert replay.row is None and replay.found.pk == second.pk
    statuses = set(Commitment.objects.values_list("status", flat=True))
    assert statuses == {Status.COMPLETED}


@pytest.mark.postgres
def test_a_later_with_a_value_not_among_its_inputs_is_built_each_time(assigner, assignee):
    c = active(assigner, assignee, "B-1")
    key = ("test", uuid.uuid4())

    done = write_decided(completing(key, "B-1", assigner, extra="Active"))

    assert lib.db._LATER[(key, (str, str, uuid.UUID, str, str))] is None
    assert done.row.pk == c.pk
