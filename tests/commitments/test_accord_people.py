"""The Accord's filter by person offers the people who asked most recently,
not everyone who ever asked (benchmarks/scale.py: for a person asked by
thousands the list was most of the page), and the person filtered by."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from commitments import selectors
from commitments.models import Commitment, Status

pytestmark = pytest.mark.django_db


@pytest.fixture
def askers(make_user, assignee):
    """Four people, each of whom asked the assignee once, a day apart: the
    first the longest ago. A fifth only drafted something for them."""
    people = [make_user(f"asker{n}@example.com", display_name=f"Asker {n}") for n in range(4)]
    start = timezone.now() - dt.timedelta(days=10)
    for n, person in enumerate(people):
        Commitment.objects.create(
            assigner=person,
            assignee=assignee,
            description=f"from {n}",
            status=Status.PENDING_HANDSHAKE,
        )
        Commitment.objects.filter(assigner=person).update(created_at=start + dt.timedelta(days=n))
    drafter = make_user("drafter@example.com")
    Commitment.objects.create(
        assigner=drafter, assignee=assignee, description="draft", status=Status.DRAFT
    )
    return people


def test_it_offers_the_people_who_asked_most_recently_by_name(assignee, askers):
    people = selectors.accord_people(user=assignee, limit=2)

    assert [p.display_name for p in people] == ["Asker 2", "Asker 3"]


def test_it_offers_everyone_who_asked_under_the_limit_and_no_drafter(assignee, askers):
    people = selectors.accord_people(user=assignee)

    assert [p.display_name for p in people] == ["Asker 0", "Asker 1", "Asker 2", "Asker 3"]


def test_the_person_filtered_by_is_offered_beyond_the_limit(assignee, askers):
    people = selectors.accord_people(user=assignee, including=askers[0].pk, limit=2)

    assert [p.display_name for p in people] == ["Asker 0", "Asker 2", "Asker 3"]


def test_someone_who_never_asked_is_not_offered_even_when_filtered_by(assignee, askers, make_user):
    stranger = make_user("stranger@example.com")

    people = selectors.accord_people(user=assignee, including=stranger.pk, limit=2)

    assert stranger not in list(people)


def test_it_is_one_query(assignee, askers):
    with CaptureQueriesContext(connection) as queries:
        list(selectors.accord_people(user=assignee, including=askers[0].pk))

    assert len(queries) == 1


def test_the_accord_page_selects_a_person_past_the_limit(client, assignee, askers, monkeypatch):
    monkeypatch.setattr(selectors.accord_people, "__kwdefaults__", {"including": None, "limit": 1})
    client.force_login(assignee)

    page = client.get(f"/?person={askers[0].pk}").content.decode()

    assert f'<option value="{askers[0].pk}" selected>' in page
    assert f'<option value="{askers[3].pk}"' in page
    assert f'<option value="{askers[1].pk}"' not in page
