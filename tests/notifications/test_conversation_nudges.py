"""The nudges of the conversation's moves (issue 26: 3, 9, 10): who hears of
each move and what it says (e-mail, Slack, Teams), moves close together in
one message (NUDGE_COALESCE_WINDOW) without delaying the first, the kinds of
news at once / in the daily digest / not at all, and the reminders of a
proposal waiting for an answer. Dispatch and send are called directly here,
as the worker would; tests/relay/test_nudges_together_worker.py runs a real
worker."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core import mail
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import EventKind, OutboxEvent, Proposal
from lib import jobs
from lib.text import MAIL_LINE_WIDTH
from notifications import dispatch, sending
from notifications.models import (
    AttemptOutcome,
    DigestReason,
    NudgeDelivery,
    NudgeDeliveryStatus,
    Reminder,
    ReminderKind,
)
from notifications.nudges import nudge_message
from notifications.reminders import reminders_create_due
from notifications.services import notification_channel_set
from notifications.transports import SlackTransport, TeamsTransport
from relay import outbox

pytestmark = pytest.mark.django_db

DEADLINE = dt.datetime(2031, 5, 2, 15, 0, tzinfo=dt.UTC)
LATER = dt.datetime(2031, 5, 9, 15, 0, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _settings(settings, monkeypatch):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.SITE_URL = "https://commitments.example.com"
    settings.NUDGE_COALESCE_WINDOW = 0  # each at once, unless a test sets it
    mail.outbox = []
    monkeypatch.setattr(jobs, "enqueue", lambda *args, **kwargs: True)


def as_user(user) -> Actor:
    return Actor.for_user(user)


def ask(assigner, assignee, description: str = "Ship the report"):
    return services.commitment_create_pending(
        actor=as_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description=description,
        deadline=DEADLINE,
    )


def dispatch_all() -> list[NudgeDelivery]:
    """Every undispatched event dispatched, in the order of the moves; the
    deliveries they made."""
    made = []
    for event in OutboxEvent.objects.filter(dispatched_at__isnull=True).order_by("pk"):
        outbox.outbox_event_dispatch(event_id=event.pk)
        made += list(NudgeDelivery.objects.filter(event=event).order_by("created_at"))
    return made


def settle() -> None:
    """Every move so far dispatched and its nudges sent, in the order of the moves."""
    dispatch_all()
    pending = NudgeDelivery.objects.filter(status=NudgeDeliveryStatus.PENDING, is_digest=False)
    send(list(pending.order_by("event_id")))


def send(deliveries) -> None:
    for delivery in deliveries:
        assert sending.nudge_send(delivery_id=delivery.pk) == AttemptOutcome.DELIVERED


def mails_to(address: str) -> list:
    return [m for m in mail.outbox if m.to == [address]]


def one_nudge(event_kind: str):
    """The one nudge of the last event of `event_kind`, sent: (delivery, mail)."""
    dispatch_all()
    event = OutboxEvent.objects.filter(kind=event_kind).latest("pk")
    # The nudges of earlier moves first: a later one waits for its turn.
    earlier = NudgeDelivery.objects.filter(
        event_id__lt=event.pk, status=NudgeDeliveryStatus.PENDING, is_digest=False
    ).order_by("event_id")
    send(list(earlier))
    (delivery,) = NudgeDelivery.objects.filter(event=event)
    before = len(mail.outbox)
    send([delivery])
    assert len(mail.outbox) == before + 1
    return delivery, mail.outbox[-1]


# --- who hears of each move, and what it says ------------------------------------------


def test_a_counter_proposal_tells_the_assigner_and_the_answers_tell_the_assignee(
    assigner, assignee
):
    c = ask(assigner, assignee)
    dispatch_all()
    services.commitment_propose(
        actor=as_user(assignee),
        commitment_id=c.pk,
        terms_version=c.terms_version,
        deadline=LATER,
        note="Friday is the board meeting.",
    )
    delivery, sent = one_nudge(EventKind.PROPOSED)
    assert delivery.recipient == assigner
    assert sent.subject == "Knight proposes other terms: Ship the report"
    assert "Proposed deadline: Fri 9 May 2031, 15:00 (UTC) (you asked: Fri 2 May" in sent.body
    assert "    | Friday is the board meeting." in sent.body

    proposal = Proposal.objects.get(commitment=c)
    services.commitment_proposal_decline(
        actor=as_user(assigner), commitment_id=c.pk, proposal_id=proposal.pk, note="No."
    )
    delivery, sent = one_nudge(EventKind.PROPOSAL_DECLINED)
    assert delivery.recipient == assignee
    assert sent.subject == "Lead declined your proposal: Ship the report"
    assert "    | No." in sent.body

    c.refresh_from_db()
    services.commitment_propose(
        actor=as_user(assignee), commitment_id=c.pk, terms_version=c.terms_version, deadline=LATER
    )
    dispatch_all()
    proposal = Proposal.objects.get(commitment=c, state="open")
    services.commitment_proposal_accept(
        actor=as_user(assigner), commitment_id=c.pk, proposal_id=proposal.pk
    )
    delivery, sent = one_nudge(EventKind.ACTIVATED)
    assert delivery.recipient == assignee  # the assigner accepted: the assignee is told
    assert sent.subject == "Lead accepted your terms: Ship the report"
    assert "By: Fri 9 May 2031, 15:00 (UTC)." in sent.body


def test_more_time_asked_tells_the_assigner_and_granted_or_declined_tells_the_assignee(
    assigner, assignee
):
    c = ask(assigner, assignee)
    services.commitment_accept(actor=as_user(assignee), commitment_id=c.pk)
    services.commitment_extension_request(
        actor=as_user(assignee), commitment_id=c.pk, deadline=LATER, note="Waiting on legal."
    )
    delivery, sent = one_nudge(EventKind.EXTENSION_REQUESTED)
    assert delivery.recipient == assigner
    assert sent.subject == "Knight asks for more time: Ship the report"
    assert "From: Fri 2 May 2031, 15:00 (UTC)\nTo: Fri 9 May 2031, 15:00 (UTC)" in sent.body
    assert "after the deadline" not in sent.body

    proposal = Proposal.objects.get(commitment=c, state="open")
    services.commitment_extension_grant(
        actor=as_user(assigner), commitment_id=c.pk, proposal_id=proposal.pk
    )
    delivery, sent = one_nudge(EventKind.EXTENSION_GRANTED)
    assert delivery.recipient == assignee
    assert sent.subject == "Lead gave you more time: Ship the report"
    assert "New deadline: Fri 9 May 2031, 15:00 (UTC)." in sent.body

    services.commitment_extension_request(
        actor=as_user(assignee), commitment_id=c.pk, deadline=LATER + dt.timedelta(days=1)
    )
    dispatch_all()
    proposal = Proposal.objects.get(commitment=c, state="open")
    services.commitment_extension_decline(
        actor=as_user(assigner), commitment_id=c.pk, proposal_id=proposal.pk, note="Sorry."
    )
    delivery, sent = one_nudge(EventKind.EXTENSION_DECLINED)
    assert delivery.recipient == assignee
    assert sent.subject == "Lead declined more time: Ship the report"
    assert "The deadline stays: Fri 9 May 2031" in sent.body


def test_a_comment_nudges_the_other_person_with_its_words_as_plain_text(
    assigner, assignee, settings
):
    c = ask(assigner, assignee)
    dispatch_all()
    body = "Use <!channel> & *this* [link](https://evil.example) " + "word " * 40 + "\nsecond line"
    services.commitment_comment(actor=as_user(assignee), commitment_id=c.pk, body=body)
    delivery, sent = one_nudge(EventKind.COMMENTED)
    assert delivery.recipient == assigner
    assert sent.subject == "Knight commented: Ship the report"
    # Mail: quoted, every line within the width and still marked as theirs.
    quoted = [line for line in sent.body.splitlines() if line.startswith("    | ")]
    assert len(quoted) >= 3 and quoted[-1] == "    | second line"
    long_lines = [line for line in sent.body.splitlines() if len(line) > MAIL_LINE_WIDTH]
    assert [line for line in long_lines if not line.startswith("https://")] == []  # links whole
    # Slack: nothing read as markup that pings or links; Teams: plain text runs.
    message = nudge_message(event=delivery.event, recipient=assigner)
    slack = SlackTransport("https://hooks.slack.com/x").payload(message)["text"]
    assert "<!channel>" not in slack and "&lt;!channel&gt; &amp;" in slack
    card = TeamsTransport("https://teams.example/x").payload(message)
    runs = [
        block["inlines"][0]
        for block in card["attachments"][0]["content"]["body"]
        if block["type"] == "RichTextBlock"
    ]
    assert any("[link](https://evil.example)" in run["text"] for run in runs)
    assert {block["type"] for block in card["attachments"][0]["content"]["body"]} == {
        "RichTextBlock"
    }

    # The assigner's comment goes to the assignee; nobody hears of their own.
    services.commitment_comment(actor=as_user(assigner), commitment_id=c.pk, body="Thanks")
    delivery, _ = one_nudge(EventKind.COMMENTED)
    assert delivery.recipient == assignee


def test_a_withdrawal_tells_the_assignee(assigner, assignee):
    c = ask(assigner, assignee)
    services.commitment_accept(actor=as_user(assignee), commitment_id=c.pk)
    services.commitment_withdraw(
        actor=as_user(assigner), commitment_id=c.pk, reason="The client dropped it"
    )
    delivery, sent = one_nudge(EventKind.WITHDRAWN)
    assert delivery.recipient == assignee
    assert sent.subject == "Lead withdrew: Ship the report"
    assert "you no longer need to do it" in sent.body
    assert "Their reason:\n    | The client dropped it\n" in sent.body


def test_a_withdrawal_without_a_reason_says_none(assigner, assignee):
    c = ask(assigner, assignee)
    services.commitment_withdraw(actor=as_user(assigner), commitment_id=c.pk)
    _, sent = one_nudge(EventKind.WITHDRAWN)
    assert "you no longer need to do it" in sent.body
    assert "reason" not in sent.body


def test_a_reassignment_asks_the_new_person_and_releases_the_previous_one(
    assigner, assignee, make_user
):
    newcomer = make_user("squire@example.com", display_name="Squire")
    c = ask(assigner, assignee)
    services.commitment_accept(actor=as_user(assignee), commitment_id=c.pk)
    settle()
    mail.outbox = []
    services.commitment_reassign(
        actor=as_user(assigner), commitment_id=c.pk, assignee_email="squire@example.com"
    )
    made = dispatch_all()
    assert {d.recipient for d in made} == {assignee, newcomer}
    send(made)
    (asked,) = mails_to("squire@example.com")
    (released,) = mails_to("knight@example.com")
    assert asked.subject == "Lead hands you: Ship the report"
    assert "Accept, decline or propose other terms" in asked.body
    assert released.subject == "Lead released you from: Ship the report"


def test_a_reassignment_to_an_address_with_no_account_mails_the_invitation_under_its_cap(
    assigner, assignee
):
    c = ask(assigner, assignee)
    settle()
    mail.outbox = []
    services.commitment_reassign(
        actor=as_user(assigner), commitment_id=c.pk, assignee_email="new@elsewhere.example"
    )
    made = dispatch_all()
    invitation = [d for d in made if d.recipient is None]
    assert [d.address for d in invitation] == ["new@elsewhere.example"]
    send(made)
    (invited,) = mails_to("new@elsewhere.example")
    assert invited.subject == "Lead asked you to do something on Commitments"
    assert len(mails_to("knight@example.com")) == 1  # released

    # A second hand-over to that address within the day waits for its digest.
    other = ask(assigner, assignee, "Another thing")
    dispatch_all()
    services.commitment_reassign(
        actor=as_user(assigner), commitment_id=other.pk, assignee_email="new@elsewhere.example"
    )
    (second,) = [d for d in dispatch_all() if d.recipient is None]
    assert second.is_digest and second.next_attempt_at > timezone.now()


# --- moves close together in one message ------------------------------------------------


def move_back(by: dt.timedelta) -> None:
    """As if every nudge had been made `by` earlier."""
    for d in NudgeDelivery.objects.all():
        NudgeDelivery.objects.filter(pk=d.pk).update(
            next_attempt_at=d.next_attempt_at - by,
            coalesce_at=d.coalesce_at - by if d.coalesce_at else None,
            counted_at=d.counted_at - by if d.counted_at else None,
        )


def send_due() -> list:
    ids = dispatch.nudge_deliveries_take_due(
        now=timezone.now(), requeue_after=dt.timedelta(0), limit=100
    )
    return [sending.nudge_send(delivery_id=i) for i in ids]


def test_the_first_move_of_a_quiet_spell_goes_at_once_and_the_next_ones_together_in_order(
    assigner, assignee, settings
):
    settings.NUDGE_COALESCE_WINDOW = 180
    first = ask(assigner, assignee, "First thing")
    (at_once,) = dispatch_all()
    assert at_once.status == NudgeDeliveryStatus.PENDING and not at_once.is_digest
    assert at_once.enqueued_at is not None  # queued now, not delayed
    send([at_once])

    second = ask(assigner, assignee, "Second thing")
    services.commitment_comment(actor=as_user(assigner), commitment_id=first.pk, body="Also")
    services.commitment_renegotiate(
        actor=as_user(assigner), commitment_id=second.pk, description="Second thing, changed"
    )
    digest, *held = dispatch_all()
    assert digest.is_digest and digest.digest_reason == DigestReason.TOGETHER
    assert digest.enqueued_at is None  # the sweep takes it at the window's end
    assert digest.next_attempt_at == at_once.coalesce_at + dt.timedelta(seconds=180)
    assert [d.status for d in held] == [NudgeDeliveryStatus.HELD] * 2
    assert {d.digest_id for d in held} == {digest.pk}

    assert send_due() == []  # not before the window's end
    assert len(mail.outbox) == 1
    move_back(dt.timedelta(seconds=181))
    assert send_due() == [AttemptOutcome.DELIVERED]

    assert len(mail.outbox) == 2
    together = mail.outbox[-1]
    assert together.subject == "3 updates about your commitments"
    body = together.body
    asks = body.index("1. Lead asks you: Second thing")
    commented = body.index("2. Lead commented: First thing")
    changed = body.index("3. Lead changed a request: Second thing, changed")
    assert asks < commented < changed  # in the order they happened
    # Nothing lost: every nudge delivered, each once.
    assert set(NudgeDelivery.objects.values_list("status", flat=True)) == {
        NudgeDeliveryStatus.DELIVERED
    }

    # The next move within a window of that message waits for the next one.
    services.commitment_comment(actor=as_user(assigner), commitment_id=first.pk, body="Again")
    (later,) = dispatch_all()
    assert later.is_digest and later.next_attempt_at > timezone.now()


def test_moves_for_different_people_do_not_wait_for_each_other(
    assigner, assignee, make_user, settings
):
    settings.NUDGE_COALESCE_WINDOW = 180
    other = make_user("squire@example.com")
    ask(assigner, assignee)
    ask(assigner, other)
    made = dispatch_all()
    assert [d.is_digest for d in made] == [False, False]


def test_the_nudge_cap_still_holds_under_moves_close_together(assigner, assignee, settings):
    settings.NUDGE_COALESCE_WINDOW = 1  # a second: the cap decides here
    settings.NUDGE_CAP = 1
    ask(assigner, assignee, "One")
    (first,) = dispatch_all()
    move_back(dt.timedelta(seconds=2))
    ask(assigner, assignee, "Two")
    (over,) = dispatch_all()
    assert over.is_digest and over.digest_reason == DigestReason.CAP
    assert over.next_attempt_at == first.counted_at - dt.timedelta(seconds=2) + dt.timedelta(
        seconds=settings.NUDGE_CAP_WINDOW
    )


# --- kinds of news: at once, in the daily digest, not at all ------------------------------


def test_news_turned_off_sends_nothing(assigner, assignee):
    notification_channel_set(user=assigner, kind="email", news={"commented": "off"})
    c = ask(assigner, assignee)
    dispatch_all()
    services.commitment_comment(actor=as_user(assignee), commitment_id=c.pk, body="Hello")
    services.commitment_propose(
        actor=as_user(assignee), commitment_id=c.pk, terms_version=c.terms_version, deadline=LATER
    )
    made = dispatch_all()
    # The comment made nothing; the proposal ("asked of me") still goes.
    assert [d.event.kind for d in made] == [EventKind.PROPOSED]


def test_news_chosen_for_the_daily_digest_waits_for_its_hour_and_comes_in_one_message(
    assigner, assignee, settings
):
    settings.DIGEST_HOUR = 8
    assignee.timezone = "Europe/Paris"
    assignee.save(update_fields=["timezone"])
    notification_channel_set(user=assignee, kind="email", news={"asked": "digest"})
    one = ask(assigner, assignee, "First thing")
    ask(assigner, assignee, "Second thing")
    digest, held = dispatch_all()
    assert digest.is_digest and digest.digest_reason == DigestReason.DAILY
    assert digest.enqueued_at is None
    due = digest.next_attempt_at.astimezone(dt.timezone(dt.timedelta(hours=0)))
    local = digest.next_attempt_at.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Paris"))
    assert (local.hour, local.minute) == (8, 0) and due > timezone.now()
    assert due - timezone.now() <= dt.timedelta(days=1)
    assert held.status == NudgeDeliveryStatus.HELD and held.digest_id == digest.pk
    # Answered news still comes at once.
    services.commitment_accept(actor=as_user(assignee), commitment_id=one.pk)
    services.commitment_withdraw(actor=as_user(assigner), commitment_id=one.pk)
    (withdrawn,) = [d for d in dispatch_all() if d.event.kind == EventKind.WITHDRAWN]
    assert not withdrawn.is_digest and withdrawn.enqueued_at is not None

    NudgeDelivery.objects.filter(pk=digest.pk).update(next_attempt_at=timezone.now())
    send_due()
    (daily,) = [m for m in mails_to("knight@example.com") if "daily digest" in m.subject]
    assert daily.subject == "Your daily digest: 2 updates"
    assert daily.body.index("1. Lead asks you: First thing") < daily.body.index(
        "2. Lead asks you: Second thing"
    )


def test_reminders_chosen_for_the_daily_digest_go_in_it(assigner, assignee, settings):
    notification_channel_set(user=assigner, kind="email", news={"reminders": "digest"})
    c = ask(assigner, assignee)
    dispatch_all()
    waited = timezone.now() + dt.timedelta(days=2, minutes=1)
    assert reminders_create_due(now=waited) == 1
    (delivery,) = NudgeDelivery.objects.filter(reminder__commitment=c)
    assert delivery.is_digest and delivery.digest_reason == DigestReason.DAILY


def test_the_settings_page_saves_each_kind_of_news(client, assignee):
    client.force_login(assignee)
    page = client.get("/settings/notifications/").content.decode()
    for label in ("Asked of me", "Answered", "Commented", "Reminders", "In the daily digest"):
        assert label in page
    response = client.post(
        "/settings/notifications/",
        {
            "kind": "email",
            "news_asked": "now",
            "news_answered": "digest",
            "news_commented": "off",
            "news_reminders": "digest",
        },
    )
    assert response.status_code == 302
    channel = assignee.nudge_channel
    assert (channel.news_asked, channel.news_answered) == ("now", "digest")
    assert (channel.news_commented, channel.news_reminders) == ("off", "digest")
    bad = client.post("/settings/notifications/", {"kind": "email", "news_asked": "loud"})
    assert bad.status_code == 400
    channel.refresh_from_db()
    assert channel.news_asked == "now"


# --- reminders of a proposal waiting for an answer --------------------------------------


def test_a_proposal_waiting_two_days_reminds_the_assigner_once(assigner, assignee):
    c = ask(assigner, assignee)
    proposal = services.commitment_propose(
        actor=as_user(assignee), commitment_id=c.pk, terms_version=c.terms_version, deadline=LATER
    )
    dispatch_all()
    assert reminders_create_due(now=timezone.now() + dt.timedelta(days=1)) == 0
    waited = timezone.now() + dt.timedelta(days=2, minutes=1)
    assert reminders_create_due(now=waited) == 1
    assert reminders_create_due(now=waited) == 0  # once
    # Not also "your request waits": it was answered with a proposal.
    (reminder,) = Reminder.objects.all()
    assert reminder.kind == ReminderKind.PROPOSAL_WAITING
    assert reminder.recipient == assigner and reminder.moment == proposal.created_at
    (delivery,) = NudgeDelivery.objects.filter(reminder=reminder)
    NudgeDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    send([delivery])
    (sent,) = mails_to("lead@example.com")
    assert sent.subject == "Reminder: Knight waits for your answer: Ship the report"


def test_a_proposal_answered_before_its_reminder_goes_is_not_reminded(assigner, assignee):
    c = ask(assigner, assignee)
    proposal = services.commitment_propose(
        actor=as_user(assignee), commitment_id=c.pk, terms_version=c.terms_version, deadline=LATER
    )
    dispatch_all()
    assert reminders_create_due(now=timezone.now() + dt.timedelta(days=2, minutes=1)) == 1
    (delivery,) = NudgeDelivery.objects.filter(reminder__isnull=False)
    NudgeDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    services.commitment_proposal_accept(
        actor=as_user(assigner), commitment_id=c.pk, proposal_id=proposal.pk
    )
    assert sending.nudge_send(delivery_id=delivery.pk) == AttemptOutcome.CANCELLED
