"""Reads for capture."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Q

from commitments.selectors import commitment_list_for_assignee, commitment_list_for_assigner


@dataclass(frozen=True)
class Collaborator:
    name: str
    email: str


def collaborators_for(*, user) -> list[Collaborator]:
    """The people the user has a commitment with, either way (excluding the
    user): the only addresses capture may put on a draft. Someone else's draft
    naming the user does not count (the Accord never shows drafts)."""
    assignee_ids = commitment_list_for_assigner(user=user).values("assignee_id")
    assigner_ids = commitment_list_for_assignee(user=user).values("assigner_id")
    people = (
        get_user_model()
        .objects.filter(Q(pk__in=assignee_ids) | Q(pk__in=assigner_ids))
        .exclude(pk=user.pk)
    )
    return sorted(
        (Collaborator(name=person.name, email=person.email) for person in people),
        key=lambda c: (c.name.casefold(), c.email),
    )
