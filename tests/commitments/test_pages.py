"""The Accord, the dashboard and the capture page: signed-in only, own rows only
(the capture flow itself: tests/gather/test_capture_page.py)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.conf import settings
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import Commitment, Status

pytestmark = pytest.mark.django_db

PAGES = ["/", "/dashboard/", "/capture/"]


@pytest.fixture
def teammate(make_user):
    return make_user("teammate@example.com", display_name="Teammate")


def pending(assigner, assignee, description, **extra) -> Commitment:
    return services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description=description,
        deadline=extra.pop("deadline", None),
        **extra,
    )


def complete(commitment: Commitment) -> None:
    services.commitment_accept(
        actor=Actor.for_user(commitment.assignee), commitment_id=commitment.pk
    )
    services.commitment_complete(
        actor=Actor.for_user(commitment.assignee), commitment_id=commitment.pk
    )


@pytest.mark.parametrize("path", PAGES)
def test_it_sends_a_signed_out_visitor_to_sign_in(client, path):
    response = client.get(path)

    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={path}"


@pytest.mark.parametrize("path", PAGES)
def test_it_renders_for_a_signed_in_user_in_the_site_design(client, assigner, path):
    client.force_login(assigner)

    response = client.get(path)

    assert response.status_code == 200
    page = response.content.decode()
    assert "css/app.css" in page
    assert "Signed in as <strong>Lead</strong>" in page
    for link in ('href="/"', 'href="/dashboard/"', 'href="/capture/"', 'href="/settings/"'):
        assert link in page
    # The current page is marked for assistive technology.
    assert f'href="{path}" aria-current="page"' in page


def test_sign_out_in_the_header_is_a_post_form(client, assigner):
    client.force_login(assigner)

    page = client.get("/").content.decode()

    assert '<form method="post" action="/accounts/logout/"' in page
    assert 'href="/accounts/logout/"' not in page


def test_accord_shows_only_what_was_asked_of_the_user(
    client, assigner, assignee, teammate, outsider
):
    pending(assigner, assignee, "Knight: find a shrubbery")
    pending(assigner, teammate, "Teammate: cut down the tallest tree")
    pending(teammate, outsider, "Outsider: say Ni")
    services.commitment_create_draft(
        actor=Actor.for_user(assigner), assignee=assignee, description="Knight: a secret draft"
    )
    client.force_login(assignee)

    page = client.get("/").content.decode()

    assert "Knight: find a shrubbery" in page
    assert "Waiting for your handshake" in page
    assert "Lead" in page  # from whom
    assert "Teammate: cut down the tallest tree" not in page
    assert "Outsider: say Ni" not in page
    assert "Knight: a secret draft" not in page  # drafts are the assigner's business


def test_accord_groups_by_what_the_user_has_to_do(client, assigner, assignee):
    waiting = pending(assigner, assignee, "still to accept")
    done = pending(assigner, assignee, "already done")
    complete(done)
    client.force_login(assignee)

    page = client.get("/").content.decode()

    assert page.index("Waiting for your handshake") < page.index(waiting.description)
    assert page.index('<h2 id="accord-completed">Completed') < page.index(done.description)
    assert 'class="badge status-completed"' in page
    assert 'class="badge status-pending_handshake"' in page


def test_accord_has_an_empty_state(client, outsider):
    client.force_login(outsider)

    assert "Nothing waiting for you." in client.get("/").content.decode()


def test_accord_marks_overdue_active_commitments(client, assigner, assignee):
    late = pending(assigner, assignee, "late one", deadline=timezone.now() - dt.timedelta(days=1))
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=late.pk)
    client.force_login(assignee)

    assert "overdue" in client.get("/").content.decode()


def test_dashboard_lists_only_what_the_user_asked(client, assigner, assignee, teammate, outsider):
    pending(assigner, assignee, "Lead asks Knight", external_system="jira", external_id="OPS-1")
    services.commitment_create_draft(
        actor=Actor.for_user(assigner), assignee=teammate, description="Lead drafts for Teammate"
    )
    pending(teammate, assigner, "Teammate asks Lead")
    pending(outsider, assignee, "Outsider asks Knight")
    client.force_login(assigner)

    page = client.get("/dashboard/").content.decode()

    assert "Lead asks Knight" in page
    assert "jira · OPS-1" in page
    drafts = page[page.index("Drafts to send") : page.index('id="flow"')]
    assert "Lead drafts for Teammate" in drafts
    assert 'class="badge status-draft"' in page  # in the list of what Lead asked
    assert 'class="badge status-pending_handshake"' in page
    assert "Teammate asks Lead" not in page
    assert "Outsider asks Knight" not in page


def test_dashboard_says_no_score_yet_without_data(client, assigner, assignee):
    pending(assigner, assignee, "not yet accepted")
    client.force_login(assignee)

    page = client.get("/dashboard/").content.decode()

    assert "No score yet" in page
    # The assignee asked nobody: no empty "What you asked" section.
    assert "What you asked of others" not in page


def test_dashboard_shows_the_users_own_flow_score(client, assigner, assignee, teammate):
    # Knight kept one (no deadline) and has one overdue: 50. Teammate kept all: 100.
    complete(pending(assigner, assignee, "kept"))
    overdue = pending(assigner, assignee, "late", deadline=timezone.now() - dt.timedelta(days=2))
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=overdue.pk)
    complete(pending(assigner, teammate, "teammate kept"))
    client.force_login(assignee)

    page = client.get("/dashboard/").content.decode()

    assert '<p class="metric" id="flow-score">50</p>' in page
    assert "1 of 2 kept, 1 overdue" in page
    assert "No score yet" not in page
    client.force_login(teammate)
    page = client.get("/dashboard/").content.decode()
    assert '<p class="metric" id="flow-score">100</p>' in page
    assert "1 of 1 kept<" in page


def test_status_badges_cover_every_status():
    css = (settings.BASE_DIR / "static" / "css" / "app.css").read_text()
    for status in Status:
        assert f".status-{status.value.lower()}" in css
