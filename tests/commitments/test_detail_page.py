"""The commitment detail page and its handshake buttons: thin views over the services."""

from __future__ import annotations

import itertools
import re
import uuid

import pytest
from django.test import Client

from audit.models import AuditAction, AuditEvent
from audit.services import Actor, audit_event_record
from commitments import selectors, services
from commitments.errors import CommitmentError
from commitments.models import Commitment, Status
from tests.harness.commitments import DEADLINE, commitment_in, snapshot

pytestmark = pytest.mark.django_db

SERVICES = {
    "send": services.commitment_send_for_handshake,
    "accept": services.commitment_accept,
    "decline": services.commitment_decline,
    "complete": services.commitment_complete,
}
CONFIRMED = {"decline", "complete"}
BUTTONS = {
    "send": "Send for handshake",
    "accept": "Accept",
    "decline": "Decline",
    "complete": "Mark completed",
}


@pytest.fixture
def people(assigner, assignee, outsider):
    return {"assigner": assigner, "assignee": assignee, "outsider": outsider}


def detail_url(c: Commitment) -> str:
    return f"/commitments/{c.pk}"


# --- seeing the page -------------------------------------------------------------------


def test_it_sends_a_signed_out_visitor_to_sign_in(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)

    response = client.get(detail_url(c))

    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next=/commitments/{c.pk}"


def test_the_assigner_sees_the_commitment_in_their_time_zone(client, assigner, assignee):
    assigner.timezone = "Asia/Tokyo"
    assigner.save()
    c = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Ship the release notes",
        deadline=DEADLINE,
        external_system="jira",
        external_id="OPS-42",
    )
    client.force_login(assigner)

    response = client.get(detail_url(c))

    assert response.status_code == 200
    page = response.content.decode()
    assert "Ship the release notes" in page
    assert '<span class="badge status-pending_handshake">Pending handshake</span>' in page
    assert "<dd>Lead</dd>" in page and "<dd>Knight</dd>" in page
    # Midnight UTC is nine in the morning in Tokyo.
    assert "1 Jan 2030, 09:00" in page and "Asia/Tokyo" in page
    assert "jira:OPS-42" in page
    assert "css/app.css" in page


def test_the_assignee_sees_it_and_the_trailing_slash_form_works(client, assigner, assignee):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    client.force_login(assignee)

    for url in (detail_url(c), detail_url(c) + "/"):
        response = client.get(url)
        assert response.status_code == 200
        page = response.content.decode()
        assert "Write the report" in page
        assert "1 Jan 2030, 00:00" in page  # the assignee's zone is UTC
        assert "<dt>Accepted</dt>" in page  # the transition time


@pytest.mark.parametrize("status", [s.value for s in Status])
def test_an_outsider_gets_404(client, assigner, assignee, outsider, status):
    c = commitment_in(status, assigner, assignee)
    client.force_login(outsider)

    assert client.get(detail_url(c)).status_code == 404


def test_the_assignee_does_not_see_a_draft(client, assigner, assignee):
    c = commitment_in(Status.DRAFT, assigner, assignee)
    client.force_login(assignee)

    assert client.get(detail_url(c)).status_code == 404


def test_an_unknown_id_is_404(client, assigner):
    client.force_login(assigner)

    assert client.get(f"/commitments/{uuid.uuid4()}").status_code == 404


def test_the_timeline_names_the_token_and_the_system(client, assigner, assignee):
    c = services.commitment_create_pending(
        actor=Actor.for_token(
            user=assigner,
            token_id=uuid.uuid4(),
            token_prefix="svc_Ab12",
            token_name="Jira automation",
        ),
        assigner=assigner,
        assignee=assignee,
        description="From the tracker",
        deadline=None,
        external_system="jira",
        external_id="OPS-7",
    )
    audit_event_record(actor=Actor.system(), subject=c, action=AuditAction.ASSIGNEE_JOINED)
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=c.pk)
    client.force_login(assignee)

    page = client.get(detail_url(c)).content.decode()

    rows = timeline_rows(page)
    assert len(rows) == 3
    assert "Asked for a handshake</strong> by Lead via API token “Jira automation”" in rows[0]
    assert "svc_Ab12" not in page  # another person's token prefix, never
    assert "Assignee joined</strong> by the system" in rows[1]
    assert "Accepted</strong> by you" in rows[2]


def test_a_token_recorded_without_a_name_shows_its_prefix_only_to_its_owner(
    client, assigner, assignee
):
    """Events recorded before tokens were named on the trail have only the prefix."""
    c = services.commitment_create_pending(
        actor=Actor.for_token(user=assigner, token_id=uuid.uuid4(), token_prefix="svc_Ab12"),
        assigner=assigner,
        assignee=assignee,
        description="From the tracker",
        deadline=None,
    )

    client.force_login(assignee)
    page = client.get(detail_url(c)).content.decode()
    assert "by Lead via API token (unnamed)" in timeline_rows(page)[0]
    assert "svc_Ab12" not in page

    client.force_login(assigner)
    page = client.get(detail_url(c)).content.decode()
    assert "by you via API token <code>svc_Ab12…</code>" in timeline_rows(page)[0]


def timeline_rows(page: str) -> list[str]:
    timeline = page[page.index('id="timeline-heading"') :]
    rows = re.findall(r'<li>\s*<time class="muted.*?</li>\s*(?=<li>|</ol>)', timeline, re.S)
    return [re.sub(r"\s+", " ", row) for row in rows]


# --- which buttons, and whether they agree with the services -------------------------


@pytest.mark.parametrize(
    ("status", "role", "action"),
    list(
        itertools.product(
            [s.value for s in Status], ["assigner", "assignee", "outsider"], list(SERVICES)
        )
    ),
)
def test_a_button_is_offered_exactly_when_the_service_allows_the_move(people, status, role, action):
    c = commitment_in(status, people["assigner"], people["assignee"])
    user = people[role]

    offered = action in selectors.commitment_actions_for(user=user, commitment=c)
    try:
        SERVICES[action](actor=Actor.for_user(user), commitment_id=c.pk)
        allowed = True
    except CommitmentError:
        allowed = False

    assert offered == allowed


@pytest.mark.parametrize(
    ("status", "role", "expected", "terms", "conversation"),
    [
        (Status.DRAFT, "assigner", {"send"}, "Save the draft", set()),
        (Status.PENDING_HANDSHAKE, "assigner", set(), "Renegotiate", {"reassign", "comment"}),
        (Status.PENDING_HANDSHAKE, "assignee", {"accept", "decline"}, None, {"propose", "comment"}),
        (Status.ACTIVE, "assigner", {"complete"}, None, {"reassign", "comment"}),
        (Status.ACTIVE, "assignee", {"complete"}, None, {"more-time", "comment"}),
        (Status.COMPLETED, "assignee", set(), None, {"comment"}),
        (Status.REFUSED, "assigner", set(), "Renegotiate", {"reassign", "comment"}),
        (Status.REFUSED, "assignee", set(), None, {"comment"}),
    ],
)
def test_the_page_shows_the_allowed_buttons_as_post_forms(
    client, people, status, role, expected, terms, conversation
):
    c = commitment_in(status, people["assigner"], people["assignee"])
    client.force_login(people[role])

    page = client.get(detail_url(c)).content.decode()

    for action, label in BUTTONS.items():
        if action in CONFIRMED:
            # Decline and complete cannot be undone: their button opens a page
            # that asks to confirm (test_confirm_page.py).
            link = f'href="/commitments/{c.pk}/{action}/confirm">{label}…</a>'
            assert (link in page) == (action in expected)
            continue
        form = f'<form method="post" action="/commitments/{c.pk}/{action}"'
        assert (form in page) == (action in expected)
        assert (f">{label}</button>" in page) == (action in expected)
    terms_form = f'<form method="post" action="/commitments/{c.pk}/terms"'
    assert (terms_form in page) == (terms is not None)
    if terms:
        assert f">{terms}</button>" in page
    # The conversation's forms (issue 26; tests/commitments/test_conversation_pages.py).
    for move in ("propose", "more-time", "comment", "reassign"):
        form = f'<form method="post" action="/commitments/{c.pk}/{move}"'
        assert (form in page) == (move in conversation), move
    forms = len(expected - CONFIRMED) + (terms is not None) + len(conversation) + 1  # + sign out
    assert page.count("csrfmiddlewaretoken") == forms


# --- the moves ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "before", "role", "after", "message"),
    [
        ("send", Status.DRAFT, "assigner", Status.PENDING_HANDSHAKE, "Sent for handshake."),
        ("accept", Status.PENDING_HANDSHAKE, "assignee", Status.ACTIVE, "Accepted"),
        ("decline", Status.PENDING_HANDSHAKE, "assignee", Status.REFUSED, "Declined."),
        ("complete", Status.ACTIVE, "assignee", Status.COMPLETED, "Marked completed."),
        ("complete", Status.ACTIVE, "assigner", Status.COMPLETED, "Marked completed."),
    ],
)
def test_each_move_goes_through_the_service(client, people, action, before, role, after, message):
    c = commitment_in(before, people["assigner"], people["assignee"])
    audits = AuditEvent.objects.for_object(c).count()
    client.force_login(people[role])

    response = client.post(f"/commitments/{c.pk}/{action}", {"terms_version": c.terms_version})

    assert response.status_code == 302
    assert response["Location"] == detail_url(c)
    c.refresh_from_db()
    assert c.status == after
    new = list(AuditEvent.objects.for_object(c).order_by("occurred_at", "id"))[audits:]
    assert len(new) == 1
    assert new[0].user == people[role] and new[0].actor_kind == "user"
    page = client.get(response["Location"]).content.decode()
    assert "msg-success" in page and message in page


def test_a_move_the_status_no_longer_allows_names_the_status(client, assigner, assignee):
    c = commitment_in(Status.ACTIVE, assigner, assignee)  # accepted in another tab
    before = snapshot(c)
    client.force_login(assignee)

    response = client.post(f"/commitments/{c.pk}/accept", follow=True)

    assert response.redirect_chain == [(detail_url(c), 302)]
    page = response.content.decode()
    assert "msg-error" in page
    assert "Could not accept this commitment: its status is Active." in page
    assert snapshot(c) == before


def test_a_move_by_the_wrong_party_is_403_and_changes_nothing(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    before = snapshot(c)
    client.force_login(assigner)

    assert client.post(f"/commitments/{c.pk}/accept").status_code == 403
    assert snapshot(c) == before


@pytest.mark.parametrize("action", list(SERVICES))
def test_an_outsider_gets_404_and_changes_nothing(client, people, action):
    status = {"send": Status.DRAFT, "complete": Status.ACTIVE}.get(action, Status.PENDING_HANDSHAKE)
    c = commitment_in(status, people["assigner"], people["assignee"])
    before = snapshot(c)
    client.force_login(people["outsider"])

    assert client.post(f"/commitments/{c.pk}/{action}").status_code == 404
    assert snapshot(c) == before


def test_the_assignee_cannot_touch_a_draft_it_cannot_see(client, assigner, assignee):
    c = commitment_in(Status.DRAFT, assigner, assignee)
    before = snapshot(c)
    client.force_login(assignee)

    for action in SERVICES:
        assert client.post(f"/commitments/{c.pk}/{action}").status_code == 404
    assert snapshot(c) == before


def test_an_unknown_id_is_404_for_a_move(client, assigner):
    client.force_login(assigner)

    assert client.post(f"/commitments/{uuid.uuid4()}/complete").status_code == 404


@pytest.mark.parametrize("action", list(SERVICES))
def test_get_on_a_move_is_405(client, assigner, assignee, action):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assignee)

    assert client.get(f"/commitments/{c.pk}/{action}").status_code == 405
    assert c.status == Status.PENDING_HANDSHAKE


def test_a_signed_out_move_goes_to_sign_in_and_back_to_the_page(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    before = snapshot(c)

    response = client.post(f"/commitments/{c.pk}/accept")

    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next=/commitments/{c.pk}"
    assert snapshot(c) == before


def test_a_move_needs_the_csrf_token(assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    before = snapshot(c)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(assignee)
    page = browser.get(detail_url(c)).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)

    assert browser.post(f"/commitments/{c.pk}/accept").status_code == 403
    assert snapshot(c) == before

    response = browser.post(
        f"/commitments/{c.pk}/accept",
        {"csrfmiddlewaretoken": token, "terms_version": c.terms_version},
    )
    assert response.status_code == 302
    c.refresh_from_db()
    assert c.status == Status.ACTIVE


# --- query budget and links ----------------------------------------------------------------


@pytest.mark.parametrize("renegotiations", [0, 12])
def test_the_page_costs_a_fixed_number_of_queries(
    client, make_user, django_assert_max_num_queries, renegotiations
):
    """Timeline events by many different people cost no extra query each."""
    lead = make_user(display_name="Lead")
    c = commitment_in(Status.PENDING_HANDSHAKE, lead, make_user())
    for n in range(renegotiations):
        services.commitment_renegotiate(
            actor=Actor.for_user(lead), commitment_id=c.pk, description=f"Version {n}"
        )
        audit_event_record(
            actor=Actor.for_token(user=make_user(), token_id=uuid.uuid4(), token_prefix="svc_x"),
            subject=c,
            action=AuditAction.ASSIGNEE_JOINED,
        )
    client.force_login(lead)
    client.get(detail_url(c))  # warm the content-type cache

    # session, user, commitment, timeline, and the navigation's count of
    # requests waiting (commitments.context_processors).
    with django_assert_max_num_queries(5):
        response = client.get(detail_url(c))

    assert response.status_code == 200
    assert response.content.decode().count("<li>") >= 2 + 2 * renegotiations


def test_the_accord_and_the_dashboard_link_each_row_to_its_page(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    link = f'<a href="/commitments/{c.pk}">Write the report</a>'

    client.force_login(assignee)
    assert link in client.get("/").content.decode()
    client.force_login(assigner)
    assert link in client.get("/dashboard/").content.decode()
