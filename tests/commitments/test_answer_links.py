"""Answering from the nudge (docs/pages.md, "Answering from the nudge";
docs/security.md, "Answer links"): the signed link's round trip, expiry and
tampering; the page it opens, which never acts on a GET, acts on a POST by the
person the link was made for on the terms it was made for, and says why when
it cannot (expired, altered, another person, answered already, terms changed)."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core import signing
from django.test import Client
from django.urls import reverse

from audit.models import AuditAction, AuditEvent
from audit.services import Actor
from commitments import services
from commitments.answer_links import (
    ANSWER_LINK_SALT,
    AnswerLinkExpired,
    AnswerLinkInvalid,
    answer_path,
    answer_token_make,
    answer_token_read,
)
from commitments.models import (
    Commitment,
    EventKind,
    OutboxEvent,
    Proposal,
    ProposalState,
    Status,
)
from tests.harness.commitments import commitment_in, many_commitments, snapshot

pytestmark = pytest.mark.django_db

LATER = dt.datetime(2030, 3, 1, 12, 0, tzinfo=dt.UTC)


def link_for(c: Commitment, user, answer: str = "accept", *, version: int | None = None) -> str:
    return answer_path(
        commitment_id=c.pk,
        user_id=user.pk,
        terms_version=c.terms_version if version is None else version,
        answer=answer,
    )


def text_of(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


@pytest.fixture
def pending(assigner, assignee) -> Commitment:
    return commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)


# --- the token ----------------------------------------------------------------------


def test_a_token_reads_back_what_it_was_made_with():
    commitment_id, user_id = uuid.uuid4(), uuid.uuid4()
    token = answer_token_make(
        commitment_id=commitment_id, user_id=user_id, terms_version=3, answer="decline"
    )

    link = answer_token_read(token, commitment_id=commitment_id)

    assert (link.commitment_id, link.user_id, link.terms_version, link.answer) == (
        commitment_id,
        user_id,
        3,
        "decline",
    )


def test_a_token_expires_after_the_max_age(settings, monkeypatch):
    commitment_id = uuid.uuid4()
    token = answer_token_make(
        commitment_id=commitment_id, user_id=uuid.uuid4(), terms_version=1, answer="accept"
    )
    settings.ANSWER_LINK_MAX_AGE = 14 * 24 * 3600
    now = signing.time.time()
    monkeypatch.setattr(signing.time, "time", lambda: now + 14 * 24 * 3600 - 60)
    assert answer_token_read(token, commitment_id=commitment_id).answer == "accept"

    monkeypatch.setattr(signing.time, "time", lambda: now + 14 * 24 * 3600 + 60)
    with pytest.raises(AnswerLinkExpired):
        answer_token_read(token, commitment_id=commitment_id)


@pytest.mark.parametrize(
    "alter",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),  # the signature
        lambda t: ("e" if t[0] != "e" else "f") + t[1:],  # the payload
        lambda t: t[: len(t) // 2],  # cut by a mail program
        lambda t: "",
        lambda t: "not-a-token",
    ],
    ids=["signature", "payload", "cut", "empty", "garbage"],
)
def test_an_altered_token_is_refused(alter):
    commitment_id = uuid.uuid4()
    token = answer_token_make(
        commitment_id=commitment_id, user_id=uuid.uuid4(), terms_version=1, answer="accept"
    )
    with pytest.raises(AnswerLinkInvalid):
        answer_token_read(alter(token), commitment_id=commitment_id)


def test_a_token_for_another_commitment_is_refused():
    token = answer_token_make(
        commitment_id=uuid.uuid4(), user_id=uuid.uuid4(), terms_version=1, answer="accept"
    )
    with pytest.raises(AnswerLinkInvalid):
        answer_token_read(token, commitment_id=uuid.uuid4())


def test_a_value_signed_with_another_salt_or_shape_is_refused():
    commitment_id = uuid.uuid4()
    payload = {"c": commitment_id.hex, "u": uuid.uuid4().hex, "v": 1, "a": "accept"}
    other_salt = signing.dumps(payload, salt="accounts.something-else")
    with pytest.raises(AnswerLinkInvalid):
        answer_token_read(other_salt, commitment_id=commitment_id)
    wrong_answer = signing.dumps({**payload, "a": "complete"}, salt=ANSWER_LINK_SALT)
    with pytest.raises(AnswerLinkInvalid):
        answer_token_read(wrong_answer, commitment_id=commitment_id)
    missing = signing.dumps({"c": commitment_id.hex}, salt=ANSWER_LINK_SALT)
    with pytest.raises(AnswerLinkInvalid):
        answer_token_read(missing, commitment_id=commitment_id)


def test_a_token_for_an_answer_that_does_not_exist_is_not_made():
    with pytest.raises(ValueError, match="No such answer"):
        answer_token_make(
            commitment_id=uuid.uuid4(), user_id=uuid.uuid4(), terms_version=1, answer="complete"
        )


# --- opening a link never acts --------------------------------------------------------


@pytest.mark.parametrize("answer", ["accept", "decline", "propose"])
def test_opening_a_link_shows_the_terms_and_the_chosen_form_and_changes_nothing(
    client, pending, assignee, answer
):
    client.force_login(assignee)
    before = snapshot(pending)

    response = client.get(link_for(pending, assignee, answer))
    head = client.head(link_for(pending, assignee, answer))

    assert response.status_code == 200 and head.status_code == 200
    assert snapshot(pending) == before  # no status, audit row or outbox row
    page = response.content.decode()
    assert "Write the report" in page
    heading = re.search(r"<h1>([^<]+)</h1>", page).group(1)
    assert (
        heading
        == {
            "accept": "Accept this request?",
            "decline": "Decline this request?",
            "propose": "Propose another date?",
        }[answer]
    )
    # The chosen answer's form comes first; the other two are offered after it.
    answers = re.findall(r'name="answer" value="(\w+)"', page)
    assert answers[0] == answer and sorted(answers) == ["accept", "decline", "propose"]
    assert page.count("csrfmiddlewaretoken") == 4  # three answers, and sign out


def test_a_signed_out_person_is_sent_to_sign_in_and_back(client, pending, assignee):
    path = link_for(pending, assignee)
    before = snapshot(pending)

    response = client.get(path)

    assert response.status_code == 302
    login = urlsplit(response["Location"])
    assert login.path == reverse("account_login")
    assert parse_qs(login.query) == {"next": [path]}
    assert snapshot(pending) == before
    signed_in = client.post(
        response["Location"], {"login": assignee.email, "password": "correct horse battery"}
    )
    assert signed_in.status_code == 302 and signed_in["Location"] == path
    assert client.get(path).status_code == 200


def test_a_signed_out_post_acts_on_nothing(client, pending, assignee):
    before = snapshot(pending)
    response = client.post(link_for(pending, assignee), {"answer": "accept"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert snapshot(pending) == before


# --- the POST acts ----------------------------------------------------------------------


def test_accepting_from_the_page_makes_it_active_with_its_audit_and_outbox_rows(
    client, pending, assignee
):
    client.force_login(assignee)
    path = link_for(pending, assignee)

    response = client.post(path, {"answer": "accept"})

    assert response.status_code == 302
    assert response["Location"] == f"/commitments/{pending.pk}"
    pending.refresh_from_db()
    assert pending.status == Status.ACTIVE
    accepted = AuditEvent.objects.for_object(pending).filter(action=AuditAction.ACCEPTED)
    assert accepted.get().user_id == assignee.pk
    assert OutboxEvent.objects.filter(commitment=pending, kind=EventKind.ACTIVATED).count() == 1


def test_declining_from_an_accept_link_with_a_reason(client, pending, assignee, assigner):
    client.force_login(assignee)

    response = client.post(
        link_for(pending, assignee, "accept"), {"answer": "decline", "reason": "  On leave  "}
    )

    assert response.status_code == 302
    pending.refresh_from_db()
    assert pending.status == Status.REFUSED
    declined = AuditEvent.objects.for_object(pending).get(action=AuditAction.DECLINED)
    assert declined.payload["reason"] == "On leave"


def test_a_reason_too_long_is_a_form_error_and_nothing_changes(client, pending, assignee):
    client.force_login(assignee)
    before = snapshot(pending)

    response = client.post(
        link_for(pending, assignee, "decline"),
        {"answer": "decline", "reason": "x" * (services.DECLINE_REASON_MAX + 1)},
    )

    assert response.status_code == 400
    assert "at most 500 characters" in text_of(response)
    assert snapshot(pending) == before


def test_an_answer_the_page_does_not_offer_does_nothing(client, pending, assignee):
    client.force_login(assignee)
    before = snapshot(pending)
    response = client.post(link_for(pending, assignee), {"answer": "complete"})
    assert response.status_code == 400
    assert snapshot(pending) == before


def test_the_post_needs_the_csrf_token(pending, assignee):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(assignee)
    path = link_for(pending, assignee)
    before = snapshot(pending)

    assert browser.post(path, {"answer": "accept"}).status_code == 403
    assert snapshot(pending) == before

    page = browser.get(path).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    answered = browser.post(path, {"csrfmiddlewaretoken": token, "answer": "accept"})
    assert answered.status_code == 302
    pending.refresh_from_db()
    assert pending.status == Status.ACTIVE


# --- who ----------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["assigner", "outsider", "staff"])
def test_another_signed_in_person_is_refused_clearly_and_nothing_changes(
    client, pending, assignee, request, who
):
    other = request.getfixturevalue(who)
    client.force_login(other)
    path = link_for(pending, assignee)
    before = snapshot(pending)

    opened = client.get(path)
    posted = client.post(path, {"answer": "accept"})

    for response in (opened, posted):
        assert response.status_code == 403
        text = text_of(response)
        assert "This link was sent to someone else" in text
        assert f"You are signed in as {other.email}" in text
        assert "Nothing was changed." in text
        assert "Write the report" not in text  # the other learns nothing of it
    assert snapshot(pending) == before
    # Signing out comes back to the link.
    assert f'name="next" value="{path}"' in opened.content.decode()


def test_a_link_of_someone_the_request_was_handed_away_from_says_so(
    client, assigner, assignee, outsider, pending
):
    path = link_for(pending, assignee)
    services.commitment_reassign(
        actor=Actor.for_user(assigner), commitment_id=pending.pk, assignee_email=outsider.email
    )
    client.force_login(assignee)
    before = snapshot(pending)

    for response in (client.get(path), client.post(path, {"answer": "accept"})):
        assert response.status_code == 404
        text = text_of(response)
        assert "This request is not waiting for you" in text
        assert "Write the report" not in text
    assert snapshot(pending) == before


# --- what the link cannot do any more ------------------------------------------------------


def test_an_expired_link_says_so_without_sign_in_and_changes_nothing(
    client, pending, assignee, settings, monkeypatch
):
    path = link_for(pending, assignee)
    now = signing.time.time()
    monkeypatch.setattr(signing.time, "time", lambda: now + settings.ANSWER_LINK_MAX_AGE + 1)
    before = snapshot(pending)

    signed_out = client.get(path)
    client.force_login(assignee)
    posted = client.post(path, {"answer": "accept"})

    for response in (signed_out, posted):
        assert response.status_code == 410
        text = text_of(response)
        assert "This link has expired" in text
        assert "stay good for 14 days" in text
        assert f'href="/commitments/{pending.pk}"' in response.content.decode()
    assert snapshot(pending) == before


def test_an_altered_link_is_a_400_page_and_changes_nothing(client, pending, assignee):
    path = link_for(pending, assignee)
    client.force_login(assignee)
    before = snapshot(pending)

    altered = path[:-3] + ("A/" if path[-2] != "A" else "B/")
    other_commitment = path.replace(str(pending.pk), str(uuid.uuid4()))
    for bad in (altered, other_commitment):
        response = client.post(bad, {"answer": "accept"})
        assert response.status_code == 400
        assert "This link is not valid" in text_of(response)
        assert "Traceback" not in response.content.decode()
    assert snapshot(pending) == before


def test_a_link_for_changed_terms_shows_the_current_terms_and_changes_nothing(
    client, pending, assigner, assignee
):
    path = link_for(pending, assignee)
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=pending.pk, deadline=LATER
    )
    client.force_login(assignee)
    before = snapshot(pending)

    opened = client.get(path)
    posted = client.post(path, {"answer": "accept"})

    for response in (opened, posted):
        assert response.status_code == 409
        text = text_of(response)
        assert "The terms changed" in text
        assert "Lead changed the terms after this link was sent to you" in text
        assert "Changed since the link was sent The deadline" in text
        assert "1 Mar 2030" in text  # the current deadline
        assert f'href="/commitments/{pending.pk}"' in response.content.decode()
        assert 'name="answer"' not in response.content.decode()  # nothing to answer here
    assert snapshot(pending) == before
    # A link for the current terms works.
    assert client.get(link_for(pending, assignee)).status_code == 200


def test_terms_changed_between_the_page_and_its_post_answer_nothing(
    client, pending, assigner, assignee
):
    path = link_for(pending, assignee)
    client.force_login(assignee)
    assert client.get(path).status_code == 200
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=pending.pk, description="Write it twice"
    )
    before = snapshot(pending)

    response = client.post(path, {"answer": "decline"})

    assert response.status_code == 409
    assert "Changed since the link was sent The description" in text_of(response)
    assert snapshot(pending) == before


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (Status.ACTIVE, "It was accepted already on"),
        (Status.REFUSED, "It was declined already on"),
        (Status.COMPLETED, "It was accepted and has been completed on"),
        (Status.WITHDRAWN, "Lead withdrew it on"),
    ],
)
def test_a_request_answered_already_says_what_happened(client, assigner, assignee, status, words):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    path = link_for(c, assignee)
    knight = Actor.for_user(assignee)
    if status == Status.REFUSED:
        services.commitment_decline(actor=knight, commitment_id=c.pk)
    elif status == Status.WITHDRAWN:
        services.commitment_withdraw(actor=Actor.for_user(assigner), commitment_id=c.pk)
    else:
        services.commitment_accept(actor=knight, commitment_id=c.pk)
    if status == Status.COMPLETED:
        services.commitment_complete(actor=knight, commitment_id=c.pk)
    client.force_login(assignee)
    before = snapshot(c)

    for response in (client.get(path), client.post(path, {"answer": "decline"})):
        assert response.status_code == 409
        text = text_of(response)
        assert words in text
        assert "This link does nothing now. Nothing was changed." in text
    assert snapshot(c) == before


def test_two_answers_racing_one_wins_and_the_other_is_told(client, pending, assignee):
    """The page was open in two tabs: the second POST finds it answered."""
    client.force_login(assignee)
    accept, decline = link_for(pending, assignee), link_for(pending, assignee, "decline")
    assert client.post(accept, {"answer": "accept"}).status_code == 302
    before = snapshot(pending)

    response = client.post(decline, {"answer": "decline"}, follow=True)

    assert "It was accepted already" in text_of(response)
    assert snapshot(pending) == before


# --- queries --------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [10, 1000])
def test_the_page_costs_the_same_queries_at_10_and_1000_commitments(
    client, assigner, assignee, django_assert_num_queries, n
):
    many_commitments(assigner, assignee, n)
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assignee)
    path = link_for(c, assignee)
    client.get(path)  # warm the content-type cache

    # session, user, the commitment with both people
    # + the navigation's count of requests waiting (commitments.context_processors)
    with django_assert_num_queries(4):
        assert client.get(path).status_code == 200
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=c.pk, deadline=LATER
    )
    # ... + what changed since (the audit trail's diffs)
    with django_assert_num_queries(5):
        assert client.get(path).status_code == 409


# --- propose another date -------------------------------------------------------------


def test_proposing_another_date_leaves_it_waiting_with_an_open_proposal(client, pending, assignee):
    client.force_login(assignee)
    response = client.post(
        link_for(pending, assignee, "propose"),
        {
            "answer": "propose",
            "deadline": "2030-03-01T12:00",
            "description": "",
            "note": "Friday, not Tuesday",
        },
    )

    assert response.status_code == 302
    assert response["Location"] == f"/commitments/{pending.pk}"
    pending.refresh_from_db()
    assert pending.status == Status.PENDING_HANDSHAKE
    (proposal,) = Proposal.objects.filter(commitment=pending)
    assert (proposal.state, proposal.deadline, proposal.description, proposal.note) == (
        ProposalState.OPEN,
        LATER,
        None,
        "Friday, not Tuesday",
    )
    assert proposal.proposed_by_id == assignee.pk
    assert AuditEvent.objects.for_object(pending).filter(action=AuditAction.PROPOSED).count() == 1
    assert OutboxEvent.objects.filter(commitment=pending, kind=EventKind.PROPOSED).count() == 1


def test_the_propose_form_shows_the_terms_asked_to_start_from(client, pending, assignee):
    client.force_login(assignee)
    page = client.get(link_for(pending, assignee, "propose")).content.decode()
    # DEADLINE of tests.harness.commitments, in the person's zone (UTC).
    assert 'id="propose-deadline" name="deadline" value="2030-01-01T00:00"' in page
    assert re.search(r'id="propose-description"[^>]*>Write the report</textarea>', page)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"deadline": "2030-01-01T00:00"}, "These are the terms asked"),
        ({"deadline": "2020-01-01T00:00"}, "Propose a date that is still ahead."),
        ({"deadline": ""}, "an empty proposal changes nothing"),
        ({"deadline": "next friday"}, "Enter a valid date/time."),
        ({"deadline": "2030-03-01T12:00", "note": "x" * 501}, "at most 500 characters"),
    ],
    ids=["unchanged", "past", "missing", "malformed", "long-note"],
)
def test_a_proposal_the_form_refuses_changes_nothing(client, pending, assignee, fields, said):
    client.force_login(assignee)
    before = snapshot(pending)

    response = client.post(link_for(pending, assignee, "propose"), {"answer": "propose", **fields})

    assert response.status_code == 400
    assert said in text_of(response)
    # The form comes back as typed, first on the page.
    answers = re.findall(r'name="answer" value="(\w+)"', response.content.decode())
    assert answers[0] == "propose"
    assert snapshot(pending) == before
    assert not Proposal.objects.exists()


def test_a_second_proposal_while_one_waits_is_refused(client, pending, assignee):
    client.force_login(assignee)
    path = link_for(pending, assignee, "propose")
    first = client.post(path, {"answer": "propose", "deadline": "2030-03-01T12:00"})
    assert first.status_code == 302
    before = snapshot(pending)

    again = client.post(path, {"answer": "propose", "deadline": "2030-04-01T12:00"})

    assert again.status_code == 400
    assert "You proposed other terms already: they wait for Lead" in text_of(again)
    assert snapshot(pending) == before
    assert Proposal.objects.count() == 1


def test_a_proposal_on_changed_terms_is_refused(client, pending, assigner, assignee):
    path = link_for(pending, assignee, "propose")
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=pending.pk, description="Write two"
    )
    client.force_login(assignee)
    before = snapshot(pending)

    response = client.post(path, {"answer": "propose", "deadline": "2030-03-01T12:00"})

    assert response.status_code == 409
    assert "The terms changed" in text_of(response)
    assert snapshot(pending) == before
    assert not Proposal.objects.exists()


def test_when_it_was_answered_is_said_in_the_viewers_time_zone(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    path = link_for(c, assignee)
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=c.pk)
    Commitment.objects.filter(pk=c.pk).update(
        activated_at=dt.datetime(2030, 1, 1, 23, 30, tzinfo=dt.UTC)
    )
    type(assignee).objects.filter(pk=assignee.pk).update(timezone="Europe/Paris")
    client.force_login(assignee)

    assert "It was accepted already on 2 Jan 2030 at 00:30" in text_of(client.get(path))
