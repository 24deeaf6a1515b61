"""Django admin for the audit trail: read-only, filterable, searchable, staff only."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.utils import timezone

from audit.models import AuditAction, AuditEvent
from audit.services import Actor, audit_event_record
from commitments import services

pytestmark = pytest.mark.django_db

LIST = "/admin/audit/auditevent/"
TOKEN_ID = uuid.UUID("00000000-0000-4000-8000-000000000042")


@pytest.fixture
def trail(assigner, assignee, outsider):
    """Three commitments: one by token (created), one accepted by a user, one system note."""
    by_token = services.commitment_create_pending(
        actor=Actor.for_token(user=assigner, token_id=TOKEN_ID, token_prefix="svc_tok3nABC"),
        assigner=assigner,
        assignee=assignee,
        description="From Jira",
        deadline=None,
        external_system="jira",
        external_id="OPS-1",
    )
    by_user = services.commitment_create_pending(
        actor=Actor.for_user(outsider),
        assigner=outsider,
        assignee=assignee,
        description="From the UI",
        deadline=None,
    )
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=by_user.pk)
    audit_event_record(
        actor=Actor.system(), subject=by_user, action=AuditAction.ASSIGNEE_JOINED, payload={"x": 1}
    )
    return {"by_token": by_token, "by_user": by_user}


def listed(response) -> list[tuple[str, str]]:
    """The events listed, less the staff user's own sign-in (also on the trail)."""
    return sorted(
        (e.action, e.actor_kind)
        for e in response.context["cl"].result_list
        if e.action != "user_signed_in"
    )


def test_staff_sees_every_event(staff_client, trail):
    response = staff_client.get(LIST)

    assert response.status_code == 200
    assert listed(response) == [
        ("accepted", "user"),
        ("assignee_joined", "system"),
        ("created", "api_token"),
        ("created", "user"),
    ]
    assert "svc_tok3nABC" in response.content.decode()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"actor_kind__exact": "api_token"}, [("created", "api_token")]),
        ({"actor_kind__exact": "system"}, [("assignee_joined", "system")]),
        ({"action": "accepted"}, [("accepted", "user")]),
    ],
)
def test_it_filters_by_actor_kind_and_action(staff_client, trail, query, expected):
    assert listed(staff_client.get(LIST, query)) == expected


def test_it_filters_by_date(staff_client, trail):
    # Aware bounds, as the admin's own date filter links give them.
    today = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    tomorrow = today + dt.timedelta(days=1)
    fmt = "%Y-%m-%d %H:%M:%S%z"

    in_range = staff_client.get(
        LIST,
        {"occurred_at__gte": today.strftime(fmt), "occurred_at__lt": tomorrow.strftime(fmt)},
    )
    later = staff_client.get(LIST, {"occurred_at__gte": tomorrow.strftime(fmt)})

    assert len(listed(in_range)) == 4
    assert listed(later) == []


def test_it_searches_by_commitment_id(staff_client, trail):
    response = staff_client.get(LIST, {"q": str(trail["by_user"].pk)})

    assert listed(response) == [
        ("accepted", "user"),
        ("assignee_joined", "system"),
        ("created", "user"),
    ]


def test_it_searches_by_user_email_in_any_case(staff_client, trail):
    response = staff_client.get(LIST, {"q": "KNIGHT@example.com"})

    assert listed(response) == [("accepted", "user")]


def test_it_searches_by_token_prefix_and_token_id(staff_client, trail):
    assert listed(staff_client.get(LIST, {"q": "svc_tok3nABC"})) == [("created", "api_token")]
    assert listed(staff_client.get(LIST, {"q": str(TOKEN_ID)})) == [("created", "api_token")]


def test_an_event_links_to_its_commitment(staff_client, trail):
    commitment = trail["by_token"]

    page = staff_client.get(LIST, {"q": "svc_tok3nABC"}).content.decode()

    assert f'href="/admin/commitments/commitment/{commitment.pk}/change/"' in page


def test_it_refuses_to_add_change_or_delete(staff_client, trail):
    event = AuditEvent.objects.get(action="assignee_joined")
    count = AuditEvent.objects.count()

    assert staff_client.get(f"{LIST}add/").status_code == 403
    assert staff_client.post(f"{LIST}add/", {"action": "forged"}).status_code == 403
    assert (
        staff_client.post(
            f"{LIST}{event.pk}/change/", {"action": "rewritten", "actor_kind": "user"}
        ).status_code
        == 403
    )
    assert staff_client.post(f"{LIST}{event.pk}/delete/", {"post": "yes"}).status_code == 403
    staff_client.post(LIST, {"action": "delete_selected", "_selected_action": [str(event.pk)]})

    event.refresh_from_db()
    assert event.action == "assignee_joined"
    assert AuditEvent.objects.count() == count


def test_the_detail_view_is_read_only(staff_client, trail):
    event = AuditEvent.objects.get(action="assignee_joined")

    response = staff_client.get(f"{LIST}{event.pk}/change/")

    assert response.status_code == 200
    page = response.content.decode()
    assert 'name="action"' not in page
    assert 'name="_save"' not in page
    assert "Delete" not in page.split('id="content-main"', 1)[1]


def test_a_non_staff_user_is_refused(client, assigner, trail):
    client.force_login(assigner)

    response = client.get(LIST)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_staff_without_permission_cannot_read_the_trail(client, make_user, trail):
    client.force_login(make_user("helpdesk@example.com", is_staff=True))

    assert client.get(LIST).status_code == 403
