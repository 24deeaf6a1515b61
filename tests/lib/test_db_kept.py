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

    # A value the build makes of its input: never kept, and still answered.
    made = Prepared(lambda digest: ApiToken.objects.filter(digest=digest.upper()))
    assert made("a") == []
    assert made._kept[(str,)] is None


@pytest.mark.postgres
def test_a_prepared_read_keeps_the_builds_own_constants_and_answers_with_each_calls_values(
    assigner,
):
    named = token_of(assigner, name="constant")
    other = token_of(assigner, name="other")
    read = Prepared(lambda digest: ApiToken.objects.filter(digest=digest, name="constant"))

    assert [t.pk for t in read(named.digest)] == [named.pk]
    assert read._kept[(str,)] is not None  # kept: "constant" is the build's own
    # The kept text, with the call's value and the constant in their places
    # (DB_CHECK_STATEMENTS compares each call with Django's own compile).
    assert read(other.digest) == []
    assert [t.pk for t in read(named.digest)] == [named.pk]


@pytest.mark.postgres
def test_a_prepared_read_of_a_list_is_kept_per_length_and_answers_as_the_orm(assigner, assignee):
    tokens = [token_of(assigner, name=f"t{n}") for n in range(4)]
    read = Prepared(
        lambda ids, user: ApiToken.objects.filter(pk__in=ids, user_id=user).order_by("pk")
    )
    pks = [t.pk for t in tokens]

    assert [t.pk for t in read(pks[:2], assigner.pk)] == sorted(pks[:2])
    assert [t.pk for t in read(pks[2:], assigner.pk)] == sorted(pks[2:])  # the same length: kept
    assert read(pks[2:], assignee.pk) == []  # another user: the call's own values
    # Duplicates and None left out, as Django's IN leaves them: length 3.
    assert [t.pk for t in read([pks[0], pks[0], None, pks[1], pks[3]], assigner.pk)] == sorted(
        [pks[0], pks[1], pks[3]]
    )
    assert [t.pk for t in read({pks[1]}, assigner.pk)] == [pks[1]]  # a set is a list
    assert set(read._kept) == {
        ((list, 2), uuid.UUID),
        ((list, 3), uuid.UUID),
        ((list, 1), uuid.UUID),
    }
    assert all(kept is not None for kept in read._kept.values())
    with CaptureQueriesContext(connection) as queries:
        assert read([], assigner.pk) == []  # through the ORM, which asks nothing
    assert len(queries) == 0


@pytest.mark.postgres
def test_a_prepared_read_with_a_subquery_keeps_its_constant_and_its_rows(assigner, assignee):
    from accounts.selectors import users_with_verified_primary_email

    read = Prepared(lambda ids: users_with_verified_primary_email().filter(pk__in=ids))
    ids = [assigner.pk, assignee.pk, uuid.uuid4()]
    expected = set(users_with_verified_primary_email().filter(pk__in=ids))

    assert set(read(ids)) == expected and expected  # the stage's people are verified
    assert read._kept[((list, 3),)] is not None
    assert set(read(list(reversed(ids)))) == expected


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


@pytest.mark.postgres
def test_a_prepared_values_list_is_kept_and_answers_as_the_orm(assigner, assignee):
    mine = [token_of(assigner, name=f"m{n}") for n in range(2)]
    theirs = token_of(assignee, name="theirs")
    ids = [t.pk for t in [*mine, theirs]]

    def pairs(ids, since):
        return (
            ApiToken.objects.filter(pk__in=ids, created_at__gte=since)
            .order_by("name")
            .values_list("name", "user__email", "created_at")
        )

    read = Prepared(pairs)
    flat = Prepared(lambda ids: ApiToken.objects.filter(pk__in=ids).values_list("pk", flat=True))
    since = mine[0].created_at

    for _ in range(2):  # compiled, then kept
        assert read(ids, since) == list(pairs(ids, since))
        assert set(flat(ids)) == set(ids)
    assert read(ids, since)[0] == ("m0", assigner.email, mine[0].created_at)
    assert read._kept[((list, 3), type(since))] is not None
    assert flat._kept[((list, 3),)] is not None
