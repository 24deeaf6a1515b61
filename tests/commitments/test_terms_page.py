"""Changing the terms on the commitment page: the assigner edits a Draft, or
renegotiates before a handshake completed (the assignee is asked again).
A thin view over commitment_update_draft and commitment_renegotiate."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client

from audit.models import AuditEvent
from commitments.models import Commitment, EventKind, OutboxEvent, Status
from tests.harness.commitments import DEADLINE, commitment_in, snapshot

pytestmark = pytest.mark.django_db


def terms_url(c: Commitment) -> str:
    return f"/commitments/{c.pk}/terms"


def post_terms(client, c, description="Write the report, with charts", deadline="2030-02-01T09:30"):
    """Post the form as the page shows it: on the current version of the terms."""
    c.refresh_from_db()
    data = {"description": description, "deadline": deadline, "terms_version": c.terms_version}
    return client.post(terms_url(c), data, follow=True)


def last_action(c: Commitment) -> str:
    last = AuditEvent.objects.for_object(c).order_by("-occurred_at").first()
    assert last is not None
    return last.action


def test_the_assigner_edits_a_draft_without_asking_anyone(client, assigner, assignee):
    c = commitment_in(Status.DRAFT, assigner, assignee)
    client.force_login(assigner)
    events_before = OutboxEvent.objects.count()

    response = post_terms(client, c)

    c.refresh_from_db()
    assert c.status == Status.DRAFT
    assert c.description == "Write the report, with charts"
    assert c.deadline == dt.datetime(2030, 2, 1, 9, 30, tzinfo=dt.UTC)
    assert last_action(c) == "draft_edited"
    assert OutboxEvent.objects.count() == events_before  # a draft edit nudges nobody
    assert "Draft saved." in response.content.decode()


@pytest.mark.parametrize("status", [Status.PENDING_HANDSHAKE, Status.REFUSED])
def test_the_assigner_renegotiates_and_the_assignee_is_asked_again(
    client, assigner, assignee, status
):
    c = commitment_in(status, assigner, assignee)
    client.force_login(assigner)

    response = post_terms(client, c)

    c.refresh_from_db()
    assert c.status == Status.PENDING_HANDSHAKE
    assert c.renegotiated_at is not None
    assert c.description == "Write the report, with charts"
    assert last_action(c) == "renegotiated"
    event = OutboxEvent.objects.filter(commitment=c).order_by("-pk").first()
    assert event.kind == EventKind.RENEGOTIATED  # the nudge to the assignee
    assert "is asked for the handshake again" in response.content.decode()


def test_the_deadline_is_read_in_the_assigners_time_zone(client, assigner, assignee):
    assigner.timezone = "Asia/Tokyo"
    assigner.save()
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assigner)

    page = client.get(f"/commitments/{c.pk}").content.decode()
    assert 'value="2030-01-01T09:00"' in page  # DEADLINE (midnight UTC) in Tokyo

    post_terms(client, c, description=c.description, deadline="2030-01-02T09:00")
    c.refresh_from_db()
    assert c.deadline == dt.datetime(2030, 1, 2, 0, 0, tzinfo=dt.UTC)


def test_a_deadline_with_seconds_survives_an_edit_of_the_description(client, assigner, assignee):
    with_seconds = dt.datetime(2030, 1, 1, 0, 0, 30, 250000, tzinfo=dt.UTC)
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee, deadline=with_seconds)
    client.force_login(assigner)
    page = client.get(f"/commitments/{c.pk}").content.decode()
    assert 'value="2030-01-01T00:00"' in page  # the field shows whole minutes

    post_terms(client, c, description="Write the report, shorter", deadline="2030-01-01T00:00")

    c.refresh_from_db()
    assert c.deadline == with_seconds
    event = AuditEvent.objects.for_object(c).get(action="renegotiated")
    assert event.payload["changes"] == {"description": "Write the report, shorter"}


def test_an_empty_deadline_removes_it(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assigner)
    post_terms(client, c, description=c.description, deadline="")
    c.refresh_from_db()
    assert c.deadline is None and last_action(c) == "renegotiated"


@pytest.mark.parametrize("status", [Status.DRAFT, Status.PENDING_HANDSHAKE])
def test_the_same_terms_change_nothing(client, assigner, assignee, status):
    c = commitment_in(status, assigner, assignee)
    client.force_login(assigner)
    before = snapshot(c)
    response = post_terms(client, c, description=c.description, deadline="2030-01-01T00:00")
    assert snapshot(c) == before
    assert "Nothing changed" in response.content.decode()
    assert c.deadline == DEADLINE


@pytest.mark.parametrize(
    ("description", "deadline", "field"),
    [
        ("   ", "2030-02-01T09:30", "description"),
        ("x" * 2001, "2030-02-01T09:30", "description"),
        ("Fine", "next friday", "deadline"),
    ],
    ids=["blank", "too-long", "relative-deadline"],
)
def test_bad_terms_are_shown_on_the_page_and_change_nothing(
    client, assigner, assignee, description, deadline, field
):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assigner)
    before = snapshot(c)

    response = client.post(terms_url(c), {"description": description, "deadline": deadline})

    assert response.status_code == 400
    assert response.context["terms_form"].errors.keys() == {field}
    assert 'class="errorlist' in response.content.decode()
    assert snapshot(c) == before


def test_2000_characters_are_accepted(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assigner)
    post_terms(client, c, description="x" * 2000)
    c.refresh_from_db()
    assert len(c.description) == 2000


def test_the_assignee_may_not_change_the_terms(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assignee)
    before = snapshot(c)
    assert (
        client.post(terms_url(c), {"description": "Less work", "deadline": ""}).status_code == 403
    )
    assert snapshot(c) == before


def test_someone_else_learns_nothing(client, assigner, assignee, outsider):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(outsider)
    before = snapshot(c)
    assert client.post(terms_url(c), {"description": "Mine", "deadline": ""}).status_code == 404
    assert snapshot(c) == before


def test_after_the_handshake_the_terms_are_fixed(client, assigner, assignee):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    client.force_login(assigner)
    before = snapshot(c)
    response = post_terms(client, c)
    assert snapshot(c) == before
    assert "Could not renegotiate this commitment: its status is Active." in (
        response.content.decode()
    )


def test_a_signed_out_post_goes_to_sign_in(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    before = snapshot(c)
    response = client.post(terms_url(c), {"description": "x", "deadline": ""})
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next=/commitments/{c.pk}"
    assert snapshot(c) == before


def test_changing_the_terms_needs_the_csrf_token(assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(assigner)
    before = snapshot(c)
    assert browser.post(terms_url(c), {"description": "x", "deadline": ""}).status_code == 403
    assert snapshot(c) == before
