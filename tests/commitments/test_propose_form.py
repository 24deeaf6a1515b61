"""One counter-proposal form and one rule on both pages that take one
(docs/pages.md, "The conversation"): the commitment page's *Propose other
terms* and the answer page's *Propose another date* both read
`commitments.forms.ProposeForm`, so each case below ends the same on both.
The pages had a form each before, and treated some of these cases
differently: a past deadline went through on the commitment page (the answer
page refused it), and other wording with the deadline field left empty was
refused on the answer page ("This field is required."; the commitment page
kept the deadline asked)."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from commitments.answer_links import answer_path
from commitments.forms import ProposeForm
from commitments.models import Commitment, Proposal, ProposalState, Status
from tests.harness.commitments import DEADLINE, commitment_in, snapshot

pytestmark = pytest.mark.django_db

PAGES = ["commitment-page", "answer-page"]


def post_proposal(client, where: str, c: Commitment, assignee, **fields: str):
    """The proposal as each page's form posts it: the commitment page's fields
    are prefixed and carry the terms version shown; the answer page's are
    plain, its link carries the version."""
    if where == "commitment-page":
        data = {f"propose-{name}": value for name, value in fields.items()}
        return client.post(
            f"/commitments/{c.pk}/propose", {**data, "propose-terms_version": c.terms_version}
        )
    path = answer_path(
        commitment_id=c.pk, user_id=assignee.pk, terms_version=c.terms_version, answer="propose"
    )
    return client.post(path, {"answer": "propose", **fields})


def said(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def assert_refused(response, c: Commitment, before: tuple, message: str) -> None:
    assert response.status_code == 400
    assert message in said(response)
    assert snapshot(c) == before
    assert not Proposal.objects.exists()


def the_proposal(response, c: Commitment) -> Proposal:
    assert response.status_code == 302
    assert response["Location"] == f"/commitments/{c.pk}"
    (proposal,) = Proposal.objects.filter(commitment=c)
    assert proposal.state == ProposalState.OPEN
    return proposal


@pytest.fixture
def pending(assigner, assignee) -> Commitment:
    return commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)


@pytest.mark.parametrize("where", PAGES)
def test_a_past_deadline_is_refused_on_both_pages(client, where, pending, assignee):
    """Before: the commitment page sent it (the assigner could accept a
    commitment overdue the moment it became Active)."""
    client.force_login(assignee)
    before = snapshot(pending)

    response = post_proposal(client, where, pending, assignee, deadline="2020-01-01T00:00")

    assert_refused(response, pending, before, ProposeForm.PAST)


@pytest.mark.parametrize("where", PAGES)
def test_other_wording_with_the_deadline_left_empty_keeps_the_deadline(
    client, where, pending, assignee
):
    """Before: the answer page refused it ("This field is required.")."""
    client.force_login(assignee)

    response = post_proposal(
        client, where, pending, assignee, deadline="", description="Write two reports"
    )

    proposal = the_proposal(response, pending)
    assert (proposal.deadline, proposal.description) == (None, "Write two reports")


@pytest.mark.parametrize("where", PAGES)
def test_nothing_typed_is_refused_on_both_pages(client, where, pending, assignee):
    client.force_login(assignee)
    before = snapshot(pending)

    response = post_proposal(client, where, pending, assignee, deadline="", description="")

    assert_refused(response, pending, before, ProposeForm.EMPTY)


@pytest.mark.parametrize("where", PAGES)
def test_the_terms_asked_sent_back_are_refused_on_both_pages(client, where, pending, assignee):
    client.force_login(assignee)
    before = snapshot(pending)

    response = post_proposal(
        client, where, pending, assignee, deadline="2030-01-01T00:00", description=""
    )

    assert_refused(response, pending, before, ProposeForm.NOTHING_CHANGED)


@pytest.mark.parametrize("where", PAGES)
def test_the_deadline_asked_stays_itself_even_once_passed(client, where, assigner, assignee):
    """A deadline asked with seconds (an inbox may send them) that has passed:
    sent back as the field shows it (whole minutes), it is that deadline,
    kept, not a past one proposed; the new wording goes."""
    asked = dt.datetime(2020, 6, 1, 12, 0, 30, tzinfo=dt.UTC)
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee, deadline=asked)
    client.force_login(assignee)

    response = post_proposal(
        client, where, c, assignee, deadline="2020-06-01T12:00", description="Write two reports"
    )

    proposal = the_proposal(response, c)
    assert (proposal.deadline, proposal.description) == (None, "Write two reports")


@pytest.mark.parametrize("where", PAGES)
def test_a_deadline_is_read_in_the_viewers_time_zone(client, where, pending, assignee):
    assignee.timezone = "Asia/Tokyo"  # UTC+9, no summer time
    assignee.save(update_fields=["timezone"])
    client.force_login(assignee)

    response = post_proposal(client, where, pending, assignee, deadline="2030-03-01T21:00")

    proposal = the_proposal(response, pending)
    assert proposal.deadline == dt.datetime(2030, 3, 1, 12, 0, tzinfo=dt.UTC)
    assert proposal.previous_deadline == DEADLINE
