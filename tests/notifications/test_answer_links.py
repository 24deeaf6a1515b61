"""A handshake request's nudge carries its answer links (Accept, Decline,
Propose another date) in every channel, made for its recipient and the terms
it shows; a renegotiation's nudge carries links for the new terms; the other
nudges carry none (docs/pages.md, "Answering from the nudge").

Nudges go through the dispatch path (the relay's outbox dispatch, then
`nudge_send`); mail is Django's in-memory backend, Slack and Teams a loopback
server (the transports' one seam)."""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlsplit

import pytest
from django.core import mail

from audit.services import Actor
from commitments import services
from commitments.answer_links import answer_token_read
from commitments.models import Commitment, EventKind, OutboxEvent
from lib import jobs
from notifications.models import AttemptOutcome
from notifications.nudges import commitment_url
from notifications.sending import nudge_send
from notifications.services import notification_channel_set
from relay import outbox
from tests.harness.services import FakeService, Reply
from tests.harness.verification import LINK

pytestmark = pytest.mark.django_db

LATER = dt.datetime(2030, 3, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _settings(settings, monkeypatch):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    settings.NOTIFY_HTTP_TIMEOUT = 2
    mail.outbox = []
    monkeypatch.setattr(jobs, "enqueue", lambda *args, **kwargs: True)


def send_nudges(c: Commitment, kind: str) -> None:
    event = OutboxEvent.objects.filter(commitment=c, kind=kind).latest("pk")
    for delivery_id in outbox.outbox_event_dispatch(event_id=event.pk):
        assert nudge_send(delivery_id=delivery_id) == AttemptOutcome.DELIVERED


def ask(assigner, assignee) -> Commitment:
    c = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="Write the runbook",
        deadline=None,
    )
    send_nudges(c, EventKind.HANDSHAKE_REQUESTED)
    return c


def answer_links_in(text: str, c: Commitment) -> list[str]:
    prefix = f"{commitment_url(c.pk)}/answer/"
    return [url for url in LINK.findall(text) if url.startswith(prefix)]


def read(url: str, c: Commitment):
    token = urlsplit(url).path.rstrip("/").rsplit("/", 1)[1]
    return answer_token_read(token, commitment_id=c.pk)


def test_the_request_mail_carries_three_links_for_its_recipient_and_terms(assigner, assignee):
    c = ask(assigner, assignee)

    (sent,) = mail.outbox
    links = answer_links_in(sent.body, c)
    assert [
        (read(url, c).answer, read(url, c).user_id, read(url, c).terms_version) for url in links
    ] == [
        ("accept", assignee.pk, 1),
        ("decline", assignee.pk, 1),
        ("propose", assignee.pk, 1),
    ]
    # Each link on a line of its own under its words, whole (never wrapped).
    for words, link in zip(["Accept:", "Decline:", "Propose another date:"], links, strict=True):
        assert f"\n{words}\n{link}\n" in sent.body
    assert "each opens a page that asks you to confirm" in sent.body
    assert sent.body.rstrip().endswith(commitment_url(c.pk))


def test_a_renegotiations_mail_carries_links_for_the_new_terms(assigner, assignee):
    c = ask(assigner, assignee)
    mail.outbox.clear()
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=c.pk, deadline=LATER
    )
    send_nudges(c, EventKind.RENEGOTIATED)

    (sent,) = mail.outbox
    assert {read(url, c).terms_version for url in answer_links_in(sent.body, c)} == {2}


def test_an_answers_nudge_to_the_asker_carries_no_answer_links(assigner, assignee):
    c = ask(assigner, assignee)
    mail.outbox.clear()
    services.commitment_accept(actor=Actor.for_user(assignee), commitment_id=c.pk)
    send_nudges(c, EventKind.ACTIVATED)

    (sent,) = mail.outbox
    assert sent.to == [assigner.email]
    assert answer_links_in(sent.body, c) == []
    assert "/answer/" not in sent.body


def test_slack_shows_the_answers_as_links_before_the_commitment(assigner, assignee):
    with FakeService(Reply(200, "ok")) as slack:
        notification_channel_set(user=assignee, kind="slack", chat_url=slack.url)
        c = ask(assigner, assignee)
        (request,) = slack.wait_for_requests(1)

    text = request.body["text"]
    links = [url.split("|")[0] for url in answer_links_in(text, c)]
    assert len(links) == 3
    assert text.endswith(
        f"<{links[0]}|Accept> · <{links[1]}|Decline> · <{links[2]}|Propose another date> · "
        f"<{commitment_url(c.pk)}|Open the commitment>"
    )
    assert [read(url, c).answer for url in links] == ["accept", "decline", "propose"]


def test_teams_shows_the_answers_as_the_cards_actions(assigner, assignee):
    with FakeService(Reply(202, "")) as teams:
        notification_channel_set(user=assignee, kind="teams", chat_url=teams.url)
        c = ask(assigner, assignee)
        (request,) = teams.wait_for_requests(1)

    (attachment,) = request.body["attachments"]
    actions = attachment["content"]["actions"]
    assert [(a["title"], read(a["url"], c).answer) for a in actions[:3]] == [
        ("Accept", "accept"),
        ("Decline", "decline"),
        ("Propose another date", "propose"),
    ]
    assert actions[3] == {
        "type": "Action.OpenUrl",
        "title": "Open the commitment",
        "url": commitment_url(c.pk),
    }
