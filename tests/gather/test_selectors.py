"""collaborators_for: the people a user may get addresses for."""

from __future__ import annotations

import pytest

from audit.services import Actor
from commitments.services import commitment_create_draft, commitment_create_pending
from gather.selectors import Collaborator, collaborators_for

pytestmark = pytest.mark.django_db


def test_collaborators_are_people_with_a_commitment_either_way(make_user):
    me = make_user("me@example.com", display_name="Me")
    asked = make_user("asked@example.com", display_name="Asked Person")
    asker = make_user("asker@example.com")
    stranger = make_user("stranger@example.com", display_name="Stranger")
    commitment_create_pending(
        actor=Actor.for_user(me), assigner=me, assignee=asked, description="Do it", deadline=None
    )
    commitment_create_pending(
        actor=Actor.for_user(asker), assigner=asker, assignee=me, description="Do it", deadline=None
    )
    commitment_create_pending(
        actor=Actor.for_user(asker),
        assigner=asker,
        assignee=stranger,
        description="Other",
        deadline=None,
    )

    assert collaborators_for(user=me) == [
        Collaborator(name="Asked Person", email="asked@example.com"),
        Collaborator(name="asker", email="asker@example.com"),
    ]


def test_someone_elses_draft_naming_the_user_does_not_make_a_collaborator(make_user):
    me = make_user("me@example.com")
    drafter = make_user("drafter@example.com")
    commitment_create_draft(actor=Actor.for_user(drafter), assignee=me, description="Unsent")

    assert collaborators_for(user=me) == []
    assert collaborators_for(user=drafter) == [Collaborator(name="me", email="me@example.com")]


def test_a_commitment_with_oneself_does_not_list_the_user(make_user):
    me = make_user("me@example.com")
    commitment_create_pending(
        actor=Actor.for_user(me), assigner=me, assignee=me, description="Self", deadline=None
    )

    assert collaborators_for(user=me) == []
