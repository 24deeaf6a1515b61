"""What you agree to is what you saw: accept, decline and the assigner's edit
form carry the version of the terms they showed, and a move on terms changed
since is refused, changes nothing, and shows the new terms and what changed."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from audit.services import Actor
from commitments import selectors, services
from commitments.errors import TermsChanged
from commitments.models import Commitment, Status
from tests.harness.commitments import DEADLINE, commitment_in, snapshot

pytestmark = pytest.mark.django_db

NEW_DEADLINE = dt.datetime(2030, 3, 1, 12, 0, tzinfo=dt.UTC)
ANSWER_PAGES = {"accept": "/commitments/{pk}", "decline": "/commitments/{pk}/decline/confirm"}


def shown_versions(page: str, form_action: str) -> list[str]:
    """The terms versions the page's forms posting to `form_action` carry."""
    forms = re.findall(rf'<form[^>]*action="{re.escape(form_action)}".*?</form>', page, re.S)
    return [v for form in forms for v in re.findall(r'name="terms_version" value="(\d+)"', form)]


def renegotiate(c: Commitment, assigner, **terms) -> None:
    terms = terms or {"description": "Write the report, in French", "deadline": NEW_DEADLINE}
    services.commitment_renegotiate(actor=Actor.for_user(assigner), commitment_id=c.pk, **terms)


# --- the version ------------------------------------------------------------------------


def test_every_draft_edit_and_renegotiation_is_a_new_version_of_the_terms(assigner, assignee):
    c = commitment_in(Status.DRAFT, assigner, assignee)
    assert c.terms_version == 1
    lead, knight = Actor.for_user(assigner), Actor.for_user(assignee)

    services.commitment_update_draft(actor=lead, commitment_id=c.pk, description="Shorter")
    c.refresh_from_db()
    assert c.terms_version == 2
    services.commitment_send_for_handshake(actor=lead, commitment_id=c.pk)
    renegotiate(c, assigner)
    c.refresh_from_db()
    assert c.terms_version == 3
    services.commitment_accept(actor=knight, commitment_id=c.pk, terms_version=3)
    c.refresh_from_db()
    assert (c.status, c.terms_version) == (Status.ACTIVE, 3)  # an answer is no new terms


# --- the services -------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [services.commitment_accept, services.commitment_decline])
def test_an_answer_to_the_terms_of_before_a_renegotiation_changes_nothing(
    assigner, assignee, answer
):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    shown = c.terms_version
    renegotiate(c, assigner)
    before = snapshot(c)  # the commitment, every audit row and every outbox row

    with pytest.raises(TermsChanged) as caught:
        answer(actor=Actor.for_user(assignee), commitment_id=c.pk, terms_version=shown)

    assert snapshot(c) == before
    assert c.status == Status.PENDING_HANDSHAKE
    assert (caught.value.shown_version, caught.value.current_version) == (shown, shown + 1)


def test_an_answer_to_the_current_terms_goes_through(assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    renegotiate(c, assigner)
    c.refresh_from_db()

    services.commitment_accept(
        actor=Actor.for_user(assignee), commitment_id=c.pk, terms_version=c.terms_version
    )

    c.refresh_from_db()
    assert c.status == Status.ACTIVE


@pytest.mark.parametrize("status", [Status.DRAFT, Status.PENDING_HANDSHAKE])
def test_an_edit_of_terms_changed_since_is_refused_and_loses_nothing(assigner, assignee, status):
    c = commitment_in(status, assigner, assignee)
    edit = (
        services.commitment_update_draft
        if status == Status.DRAFT
        else services.commitment_renegotiate
    )
    lead = Actor.for_user(assigner)
    shown = c.terms_version
    edit(actor=lead, commitment_id=c.pk, description="First tab's words", terms_version=shown)
    before = snapshot(c)

    with pytest.raises(TermsChanged):
        edit(actor=lead, commitment_id=c.pk, description="Second tab's words", terms_version=shown)

    assert snapshot(c) == before
    assert c.description == "First tab's words"


def test_what_changed_since_a_version_comes_from_the_diffs_of_the_trail(assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    shown = c.terms_version
    renegotiate(c, assigner, description="Second words")
    renegotiate(c, assigner, description="Third words", deadline=None)
    c.refresh_from_db()

    changes = selectors.commitment_terms_changes_since(commitment=c, terms_version=shown)
    assert changes == {"description": "Third words", "deadline": None}
    assert selectors.commitment_terms_changes_since(commitment=c, terms_version=shown + 1) == {
        "description": "Third words",
        "deadline": None,
    }
    renegotiate(c, assigner, deadline=NEW_DEADLINE)
    changes = selectors.commitment_terms_changes_since(commitment=c, terms_version=shown + 2)
    assert changes == {"deadline": NEW_DEADLINE}


def test_the_api_answers_a_stale_answer_with_409_terms_changed():
    from config.api_errors import exception_handler

    error = TermsChanged(action="accept", shown_version=1, current_version=2)
    response = exception_handler(error, {})

    assert response.status_code == 409
    assert response.data["error"] == "terms_changed"
    assert response.data["details"] == {"termsVersion": 2}
    assert "terms changed" in response.data["message"]


# --- the page: accept and decline ----------------------------------------------------------


@pytest.mark.parametrize(("action", "word"), [("accept", "accepted"), ("decline", "declined")])
def test_an_answer_posted_from_a_page_of_before_a_renegotiation_changes_nothing_and_shows_the_new_terms(  # noqa: E501
    client, assigner, assignee, action, word
):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assignee)
    # Accept is a form on the commitment page; decline one on its confirmation page.
    answer_page = ANSWER_PAGES[action].format(pk=c.pk)
    page = client.get(answer_page).content.decode()
    (shown,) = shown_versions(page, f"/commitments/{c.pk}/{action}")
    renegotiate(c, assigner)  # while the assignee reads the page
    before = snapshot(c)

    response = client.post(f"/commitments/{c.pk}/{action}", {"terms_version": shown})

    assert response.status_code == 409
    assert snapshot(c) == before  # status, audit trail and outbox untouched
    page = response.content.decode()
    assert f"Nothing was {word}: Lead changed the terms after this page was opened." in page
    changed = page[page.index('id="terms-changed-heading"') : page.index('id="what-heading"')]
    assert "New description" in changed and "Write the report, in French" in changed
    assert "New deadline" in changed and "1 Mar 2030, 12:00" in changed
    # Answering again answers the terms now shown.
    page = page if action == "accept" else client.get(answer_page).content.decode()
    assert "Write the report, in French" in page
    (now_shown,) = shown_versions(page, f"/commitments/{c.pk}/{action}")
    assert int(now_shown) == c.terms_version != int(shown)
    assert (
        client.post(f"/commitments/{c.pk}/{action}", {"terms_version": now_shown}).status_code
        == 302
    )
    c.refresh_from_db()
    assert c.status == (Status.ACTIVE if action == "accept" else Status.REFUSED)


def test_an_answer_without_a_terms_version_is_refused(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    before = snapshot(c)
    client.force_login(assignee)

    for data in ({}, {"terms_version": "not a number"}):
        assert client.post(f"/commitments/{c.pk}/accept", data).status_code == 409
    assert snapshot(c) == before


def test_the_page_shows_the_deadline_that_changed_in_the_viewers_time_zone(
    client, assigner, assignee
):
    assignee.timezone = "Asia/Tokyo"
    assignee.save()
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    shown = c.terms_version
    renegotiate(c, assigner, deadline=NEW_DEADLINE)
    client.force_login(assignee)

    page = client.post(f"/commitments/{c.pk}/accept", {"terms_version": shown}).content.decode()

    assert "New deadline" in page and "1 Mar 2030, 21:00" in page  # 12:00 UTC in Tokyo
    assert "New description" not in page  # only what changed


# --- the page: two tabs editing -------------------------------------------------------------


@pytest.mark.parametrize("status", [Status.DRAFT, Status.PENDING_HANDSHAKE])
def test_two_tabs_editing_the_terms_lose_no_update(client, assigner, assignee, status):
    c = commitment_in(status, assigner, assignee)
    client.force_login(assigner)
    terms_url = f"/commitments/{c.pk}/terms"
    first_tab = client.get(f"/commitments/{c.pk}").content.decode()
    second_tab = client.get(f"/commitments/{c.pk}").content.decode()
    (first_version,) = shown_versions(first_tab, terms_url)
    (second_version,) = shown_versions(second_tab, terms_url)

    saved = client.post(
        terms_url,
        {
            "description": "First tab",
            "deadline": "2030-01-01T00:00",
            "terms_version": first_version,
        },
    )
    assert saved.status_code == 302
    before = snapshot(c)
    stale = client.post(
        terms_url,
        {
            "description": "Second tab",
            "deadline": "2030-05-05T10:00",
            "terms_version": second_version,
        },
    )

    assert stale.status_code == 409
    assert snapshot(c) == before  # the first tab's edit stands, nothing else written
    assert c.description == "First tab" and c.deadline == DEADLINE
    page = stale.content.decode()
    assert "Your change was not saved: the terms were changed elsewhere" in page
    # The form is shown again with the current terms and their version ...
    assert re.search(r"<textarea[^>]*>\s*First tab</textarea>", page)
    assert shown_versions(page, terms_url) == [str(c.terms_version)]
    # ... and what the second tab sent, so it can be redone.
    assert "What you sent (not saved)" in page and "Second tab" in page
    assert "5 May 2030, 10:00" in page
