"""What people typed (names, descriptions) reaches a nudge as text, never as
structure: a subject is one line whatever a name holds, a mail that cannot be
written fails once instead of being retried as an unexpected error, and a
Teams card shows a description's Markdown as the characters typed.

Slack and Teams are a loopback server (the transports' one seam); mail is
Django's in-memory backend."""

from __future__ import annotations

import pytest
from django.core import mail
from django.core.mail.backends.base import BaseEmailBackend
from django.core.mail.message import sanitize_address

from audit.services import Actor
from commitments import services
from commitments.models import EventKind, OutboxEvent
from lib import jobs
from lib.text import one_line
from notifications.models import AttemptOutcome, NudgeDelivery, NudgeDeliveryStatus
from notifications.nudges import commitment_url
from notifications.sending import nudge_send
from notifications.services import notification_channel_set
from notifications.transports import Message, TeamsTransport
from relay import outbox
from tests.harness.services import FakeService, Reply

pytestmark = pytest.mark.django_db

PHISH = "[Re-enter your password](https://login.example.net/reset) **now**"


@pytest.fixture(autouse=True)
def _settings(settings, monkeypatch):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    settings.NOTIFY_HTTP_TIMEOUT = 2
    mail.outbox = []
    monkeypatch.setattr(jobs, "enqueue", lambda *args, **kwargs: True)


def ask(assigner, assignee, description: str = "Write the runbook") -> NudgeDelivery:
    commitment = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description=description,
        deadline=None,
    )
    event = OutboxEvent.objects.get(commitment=commitment, kind=EventKind.HANDSHAKE_REQUESTED)
    (delivery_id,) = outbox.outbox_event_dispatch(event_id=event.pk)
    return NudgeDelivery.objects.get(pk=delivery_id)


def stored_as(user, **fields) -> None:
    """What a row written before names were checked may hold (no validation)."""
    type(user).objects.filter(pk=user.pk).update(**fields)
    user.refresh_from_db()


def test_a_name_stored_with_line_breaks_still_gets_its_nudges_out_on_one_line(assigner, assignee):
    stored_as(assigner, display_name="Lead\r\nBcc: everyone@example.com\x1b[2J")

    delivery = ask(assigner, assignee)
    outcome = nudge_send(delivery_id=delivery.pk)

    assert outcome == AttemptOutcome.DELIVERED
    (sent,) = mail.outbox
    assert sent.subject == "Lead Bcc: everyone@example.com [2J asks you: Write the runbook"
    message = sent.message()
    assert message["Subject"] == sent.subject
    assert message["Bcc"] is None and sent.recipients() == ["knight@example.com"]


def test_every_subject_is_folded_to_one_line_whoever_builds_it():
    message = Message(subject="  Lead\u2028asks\tyou:\r\n\x00Ship\x85it  ", text="a\nb", url="u")

    assert message.subject == "Lead asks you: Ship it"
    assert message.text == "a\nb"  # the body keeps its lines


def test_one_line_leaves_ordinary_text_alone():
    assert one_line("Łukasz asks you: ship «it» — by Friday") == (
        "Łukasz asks you: ship «it» — by Friday"
    )


class SmtpLikeBackend(BaseEmailBackend):
    """Reads the addresses as Django's SMTP backend does before it talks to
    the server (`sanitize_address`), then keeps the message."""

    def send_messages(self, messages):
        for message in messages:
            for address in message.recipients():
                sanitize_address(address, message.encoding or "utf-8")
            mail.outbox.append(message)
        return len(messages)


@pytest.mark.parametrize(
    "address",
    [
        "knight@example.com\nBcc: everyone@example.com",  # would end the To header early
        "knight@@example.com",  # does not parse
    ],
)
def test_a_mail_that_cannot_be_written_fails_for_good_instead_of_being_retried(
    assigner, assignee, address, settings
):
    settings.EMAIL_BACKEND = f"{__name__}.SmtpLikeBackend"
    delivery = ask(assigner, assignee)
    # An address no form takes, stored by other means.
    stored_as(assignee, email=address)

    outcome = nudge_send(delivery_id=delivery.pk)

    assert outcome == AttemptOutcome.PERMANENT
    delivery.refresh_from_db()
    assert delivery.status == NudgeDeliveryStatus.FAILED
    assert delivery.next_attempt_at <= delivery.updated_at  # no retry planned
    assert "could not be written as mail" in delivery.last_error
    assert mail.outbox == []


def teams_card_of(service: FakeService) -> dict:
    (request,) = service.wait_for_requests(1)
    (attachment,) = request.body["attachments"]
    return attachment["content"]


def texts_of(card: dict) -> list[tuple[str, str | None, str]]:
    """Every string the card shows, with the element type that carries it."""
    shown = []
    for element in card["body"]:
        for run in element.get("inlines", []):
            shown.append((element["type"], run["type"], run["text"]))
        if "text" in element:
            shown.append((element["type"], None, element["text"]))
    return shown


def test_a_teams_card_shows_a_descriptions_markdown_as_typed_not_as_a_link(assigner, assignee):
    with FakeService(Reply(202, "")) as teams:
        notification_channel_set(user=assignee, kind="teams", chat_url=teams.url)
        stored_as(assigner, display_name="[IT desk](https://login.example.net)")
        delivery = ask(assigner, assignee, description=PHISH)

        assert nudge_send(delivery_id=delivery.pk) == AttemptOutcome.DELIVERED
        card = teams_card_of(teams)

    shown = texts_of(card)
    # Only plain-text runs: a TextBlock's text would be read as Markdown.
    assert {(element, run) for element, run, _ in shown} == {("RichTextBlock", "TextRun")}
    texts = [text for _, _, text in shown]
    assert texts[0] == f"[IT desk](https://login.example.net) asks you: {PHISH[:59]}…"
    assert f"[IT desk](https://login.example.net) asks you to: {PHISH}" in texts
    # The links are the card's own actions, to this site: the answers, then the commitment.
    assert [action["title"] for action in card["actions"]] == [
        "Accept",
        "Decline",
        "Propose another date",
        "Open the commitment",
    ]
    assert {action["type"] for action in card["actions"]} == {"Action.OpenUrl"}
    assert card["actions"][-1]["url"] == commitment_url(delivery.event.commitment_id)
    answer = f"{commitment_url(delivery.event.commitment_id)}/answer/"
    assert all(action["url"].startswith(answer) for action in card["actions"][:3])


def test_a_teams_card_keeps_each_line_of_the_text_as_a_paragraph():
    card = TeamsTransport("https://teams.example").payload(
        Message(subject="Heading", text="First line\n\nSecond _line_", url="https://x")
    )

    assert [block["inlines"][0]["text"] for block in card["attachments"][0]["content"]["body"]] == [
        "Heading",
        "First line",
        "Second _line_",
    ]
