"""Django admin for commitments: a read-only window for staff, with the audit trail inline."""

from __future__ import annotations

import re

import pytest

from audit.services import Actor
from commitments import services
from commitments.models import Commitment, Status

pytestmark = pytest.mark.django_db

LIST = "/admin/commitments/commitment/"


@pytest.fixture
def rows(assigner, assignee, outsider):
    inbox = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Find a shrubbery",
        deadline=None,
        external_system="jira",
        external_id="OPS-42",
    )
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=inbox.pk)
    draft = services.commitment_create_draft(
        actor=Actor.for_user(outsider), assignee=assigner, description="Say Ni to the lead"
    )
    return {"inbox": inbox, "draft": draft}


def listed(response) -> set[str]:
    return {c.description for c in response.context["cl"].result_list}


def test_staff_sees_the_list_with_its_columns(staff_client, rows):
    response = staff_client.get(LIST)

    assert response.status_code == 200
    assert listed(response) == {"Find a shrubbery", "Say Ni to the lead"}
    page = response.content.decode()
    assert "jira:OPS-42" in page
    assert "knight@example.com" in page


def test_it_filters_by_status(staff_client, rows):
    response = staff_client.get(LIST, {"status__exact": Status.DRAFT})

    assert listed(response) == {"Say Ni to the lead"}


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        ("shrubbery", {"Find a shrubbery"}),
        ("OPS-42", {"Find a shrubbery"}),
        ("KNIGHT@example.com", {"Find a shrubbery"}),
        ("outsider@example.com", {"Say Ni to the lead"}),
        ("lead@example.com", {"Find a shrubbery", "Say Ni to the lead"}),
        ("nothing-like-this", set()),
    ],
)
def test_it_searches_description_external_id_and_emails(staff_client, rows, term, expected):
    assert listed(staff_client.get(LIST, {"q": term})) == expected


def test_it_finds_a_commitment_by_its_id(staff_client, rows):
    response = staff_client.get(LIST, {"q": str(rows["draft"].pk)})

    assert listed(response) == {"Say Ni to the lead"}


def test_detail_shows_the_audit_trail_and_outbox_inline_read_only(staff_client, rows):
    response = staff_client.get(f"{LIST}{rows['inbox'].pk}/change/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "Audit trail" in page
    assert "created" in page and "accepted" in page
    assert "Outbox events" in page
    assert "handshake_requested" in page or "Handshake requested" in page
    # Read-only: nothing to type into or choose, for the commitment or its inlines.
    fields = re.findall(r"<(input|textarea|select)\b([^>]*)>", page)
    editable = [
        attrs
        for tag, attrs in fields
        if 'type="hidden"' not in attrs and 'id="nav-filter"' not in attrs
    ]
    assert editable == []
    assert 'name="_save"' not in page


def test_staff_cannot_add_change_or_delete_commitments(staff_client, rows):
    commitment = rows["inbox"]

    assert staff_client.get(f"{LIST}add/").status_code == 403
    assert (
        staff_client.post(
            f"{LIST}{commitment.pk}/change/", {"description": "rewritten", "status": "Completed"}
        ).status_code
        == 403
    )
    assert staff_client.post(f"{LIST}{commitment.pk}/delete/", {"post": "yes"}).status_code == 403
    commitment.refresh_from_db()
    assert (commitment.description, commitment.status) == ("Find a shrubbery", Status.ACTIVE)
    assert Commitment.objects.count() == 2


def test_bulk_delete_is_not_offered(staff_client, rows):
    response = staff_client.post(
        LIST, {"action": "delete_selected", "_selected_action": [str(rows["draft"].pk)]}
    )

    assert Commitment.objects.count() == 2
    assert response.status_code in (200, 302)


def test_a_non_staff_user_is_refused(client, assigner, rows):
    client.force_login(assigner)

    response = client.get(LIST)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")
