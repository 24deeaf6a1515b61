"""An address without an account, asked from the web, gets an invitation
e-mail: the `invited` outbox row becomes one delivery to that address (no
recipient user), sent, retried and recorded like every nudge; nothing else
is nudged, and no webhook fires."""

from __future__ import annotations

import datetime as dt
import os
import re

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core import mail
from django.db.models import F
from django.utils import timezone

from audit.services import Actor
from commitments import services
from commitments.models import Commitment, EventKind, OutboxEvent
from lib import jobs
from notifications import dispatch
from notifications.models import AttemptOutcome, ChannelKind, NudgeDelivery, NudgeDeliveryStatus
from notifications.nudges import unlinked
from notifications.sending import nudge_send
from relay import outbox
from tests.harness.concurrency import race
from tests.harness.services import (
    celery_worker,
    purge_queue,
    read_mails,
    subprocess_env,
    wait_until,
)

pytestmark = pytest.mark.django_db

User = get_user_model()


@pytest.fixture(autouse=True)
def _settings(settings, monkeypatch):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.SITE_URL = "https://commitments.example.com"
    mail.outbox = []
    monkeypatch.setattr(jobs, "enqueue", lambda *args, **kwargs: True)


def invite(assigner, email="newcomer@example.com", *, send=True):
    return invite_with(assigner, "Water the shrubbery", email=email, send=send)


def invite_with(assigner, description, *, email="newcomer@example.com", send=True):
    return services.commitment_ask(
        actor=Actor.for_user(assigner),
        assignee_email=email,
        description=description,
        deadline=None,
        send=send,
    )


def send_everything_due() -> list[str | None]:
    """What the sweep would queue now, sent."""
    ids = dispatch.nudge_deliveries_take_due(
        now=timezone.now(), requeue_after=dt.timedelta(0), limit=500
    )
    return [nudge_send(delivery_id=i) for i in ids]


def pass_a_day() -> None:
    """As if every delivery had been made a day (and a second) earlier."""
    day = dt.timedelta(days=1, seconds=1)
    NudgeDelivery.objects.update(next_attempt_at=F("next_attempt_at") - day)
    NudgeDelivery.objects.filter(counted_at__isnull=False).update(counted_at=F("counted_at") - day)


def test_the_invited_event_becomes_one_delivery_to_the_address(assigner):
    c = invite(assigner)
    event = OutboxEvent.objects.get(commitment=c)
    assert event.kind == EventKind.INVITED

    (delivery_id,) = outbox.outbox_event_dispatch(event_id=event.pk)
    OutboxEvent.objects.filter(pk=event.pk).update(dispatched_at=None)  # dispatched again
    assert outbox.outbox_event_dispatch(event_id=event.pk) == []

    delivery = NudgeDelivery.objects.get()
    assert delivery.pk == delivery_id
    assert (delivery.recipient, delivery.address, delivery.channel) == (
        None,
        "newcomer@example.com",
        ChannelKind.EMAIL,
    )


def test_the_invitation_says_who_asks_what_and_how_to_answer(assigner):
    c = invite(assigner)
    (delivery_id,) = outbox.outbox_event_dispatch(event_id=OutboxEvent.objects.get(commitment=c).pk)

    assert nudge_send(delivery_id=delivery_id) == AttemptOutcome.DELIVERED

    (sent,) = mail.outbox
    assert sent.to == ["newcomer@example.com"]
    assert sent.subject == "Lead asked you to do something on Commitments"
    assert "Lead (lead@example[.]com) asked you to do something" in sent.body
    assert "    | Water the shrubbery\n" in sent.body
    # (The body is wrapped in lines of 78: read it as one paragraph.)
    assert "sign up with this address (newcomer@example.com)" in " ".join(sent.body.split())
    assert "https://commitments.example.com/accounts/signup/?email=" in sent.body
    delivery = NudgeDelivery.objects.get()
    assert delivery.status == NudgeDeliveryStatus.DELIVERED
    assert [a.outcome for a in delivery.attempt_log.all()] == [AttemptOutcome.DELIVERED]


def test_the_askers_words_are_only_in_the_body_quoted_and_without_links(assigner):
    assigner.display_name = "IT desk, see www.it-desk.example"
    assigner.save()
    c = invite_with(
        assigner,
        "Your mailbox is full, log in at https://mail.example.com/login?u=you\n"
        "or write to helpdesk@mail.example.com",
    )
    (delivery_id,) = outbox.outbox_event_dispatch(event_id=OutboxEvent.objects.get(commitment=c).pk)
    nudge_send(delivery_id=delivery_id)

    (sent,) = mail.outbox
    # The subject is ours: who asked (their name cut short, no links), on which site.
    assert sent.subject == (
        "IT desk, see www[.]it-desk[.]example asked you to do something on Commitments"
    )
    assert "mailbox" not in sent.subject
    # The request is quoted, marked as the asker's words, and no link survives.
    assert "in their own words (written by them, not by Commitments" in sent.body
    # Each line of them quoted, also where a long one is wrapped.
    assert (
        "    | Your mailbox is full, log in at\n    | https[:]//mail[.]example[.]com/login?u=you\n"
    ) in sent.body
    assert "    | or write to helpdesk@mail[.]example[.]com\n" in sent.body
    for link in ("https://mail", "mail.example.com", "www.it-desk", "it-desk.example"):
        assert link not in sent.body
    # Our own links stay links.
    assert "(https://commitments.example.com)" in sent.body


@pytest.mark.parametrize(
    ("words", "shown"),
    [
        ("Log in at https://mail.example.com/x", "Log in at https[:]//mail[.]example[.]com/x"),
        ("HTTP://EVIL.EXAMPLE", "HTTP[:]//EVIL[.]EXAMPLE"),
        ("see www.example.org.", "see www[.]example[.]org."),
        ("write to a.b@corp.example", "write to a.b@corp[.]example"),
        ("open http://10.0.0.1:8080/", "open http[:]//10[.]0[.]0[.]1:8080/"),
        ("full-width evil\uff0ecom", "full-width evil[.]com"),
        # Prose stays as written.
        ("Pay 1.5 days, e.g. Monday. Then rest.", "Pay 1.5 days, e.g. Monday. Then rest."),
    ],
)
def test_nothing_the_asker_wrote_stays_a_link(words, shown):
    assert unlinked(words) == shown


def test_forty_asks_give_one_invitation_now_and_one_digest_a_day_later(assigner, settings):
    settings.INVITATIONS_PER_DAY = 40
    asks = [invite_with(assigner, f"Request number {n}") for n in range(40)]
    for c in asks:
        outbox.outbox_event_dispatch(event_id=OutboxEvent.objects.get(commitment=c).pk)

    assert send_everything_due() == [AttemptOutcome.DELIVERED]
    (first,) = mail.outbox
    assert "Request number 0\n" in first.body and "Request number 1\n" not in first.body
    digest = NudgeDelivery.objects.get(is_digest=True)
    assert digest.next_attempt_at >= timezone.now() + dt.timedelta(hours=23)
    assert (
        NudgeDelivery.objects.filter(status=NudgeDeliveryStatus.HELD, digest=digest).count() == 38
    )

    pass_a_day()
    assert send_everything_due() == [AttemptOutcome.DELIVERED]
    assert send_everything_due() == []
    assert len(mail.outbox) == 2
    sent = mail.outbox[1]
    assert sent.to == ["newcomer@example.com"]
    assert sent.subject == "39 more requests wait for you on Commitments"
    for n in range(1, 11):
        assert f"    | Request number {n}\n" in sent.body
    assert "Request number 11\n" not in sent.body
    assert "... and 29 more." in sent.body
    assert set(NudgeDelivery.objects.values_list("status", flat=True)) == {
        NudgeDeliveryStatus.DELIVERED
    }


def test_every_asker_shares_the_one_mail_a_day_of_an_address(assigner, assignee, outsider):
    for person in (assigner, assignee, outsider):
        c = invite(person)
        outbox.outbox_event_dispatch(event_id=OutboxEvent.objects.get(commitment=c).pk)

    assert send_everything_due() == [AttemptOutcome.DELIVERED]
    assert len(mail.outbox) == 1
    pass_a_day()
    assert send_everything_due() == [AttemptOutcome.DELIVERED]
    assert mail.outbox[1].subject == "2 more requests wait for you on Commitments"
    assert "Knight (knight@example[.]com) asked:" in mail.outbox[1].body


def test_after_a_quiet_day_the_next_ask_is_invited_at_once(assigner):
    first = invite(assigner)
    outbox.outbox_event_dispatch(event_id=OutboxEvent.objects.get(commitment=first).pk)
    send_everything_due()
    pass_a_day()

    later = invite_with(assigner, "Trim the hedge")
    outbox.outbox_event_dispatch(event_id=OutboxEvent.objects.get(commitment=later).pk)

    assert send_everything_due() == [AttemptOutcome.DELIVERED]
    assert mail.outbox[-1].subject == "Lead asked you to do something on Commitments"
    assert "    | Trim the hedge\n" in mail.outbox[-1].body


def test_a_renegotiation_mails_no_new_invitation_and_the_digest_shows_the_new_terms(assigner):
    lead = Actor.for_user(assigner)
    first, second = invite_with(assigner, "First"), invite_with(assigner, "Second")
    for c in (first, second):
        outbox.outbox_event_dispatch(event_id=OutboxEvent.objects.get(commitment=c).pk)
    send_everything_due()

    for c in (first, second):
        services.commitment_renegotiate(
            actor=lead, commitment_id=c.pk, description=f"{c.description}, changed"
        )
        event = OutboxEvent.objects.filter(commitment=c).last()
        assert event.kind == EventKind.RENEGOTIATED
        assert outbox.outbox_event_dispatch(event_id=event.pk) == []

    assert NudgeDelivery.objects.count() == 2  # the invitation, and the digest of the second ask
    assert send_everything_due() == []
    assert len(mail.outbox) == 1
    pass_a_day()
    send_everything_due()
    assert len(mail.outbox) == 2
    assert "    | Second, changed\n" in mail.outbox[1].body


def test_the_claim_delivers_every_waiting_request_and_the_digest_is_not_sent(
    assigner, make_user, settings, django_capture_on_commit_callbacks
):
    settings.INVITATIONS_PER_DAY = 40
    asks = [invite_with(assigner, f"Request number {n}") for n in range(40)]
    for c in asks:
        outbox.outbox_event_dispatch(event_id=OutboxEvent.objects.get(commitment=c).pk)
    send_everything_due()

    with django_capture_on_commit_callbacks(execute=True):
        newcomer = make_user("newcomer@example.com")  # the address proved: claimed

    assert Commitment.objects.filter(assignee=newcomer, invitation__isnull=False).count() == 40
    pass_a_day()
    assert send_everything_due() == [AttemptOutcome.CANCELLED]
    assert len(mail.outbox) == 1  # the invitation only: the rest wait in the Accord
    assert not NudgeDelivery.objects.filter(status=NudgeDeliveryStatus.HELD).exists()
    assert NudgeDelivery.objects.filter(status=NudgeDeliveryStatus.CANCELLED).count() == 39


def test_the_invitations_link_opens_the_sign_up_form_with_the_address_filled_in(assigner, client):
    c = invite(assigner, email="new.comer+team@example.com")
    (delivery_id,) = outbox.outbox_event_dispatch(event_id=OutboxEvent.objects.get(commitment=c).pk)
    nudge_send(delivery_id=delivery_id)
    (sent,) = mail.outbox
    link = re.search(r"https://commitments\.example\.com(/accounts/signup/\S*)", sent.body)

    form = client.get(link.group(1))

    assert form.status_code == 200
    email_input = re.search(r'<input[^>]*name="email"[^>]*>', form.content.decode()).group(0)
    assert 'value="new.comer+team@example.com"' in email_input
    # Only filled in: no account, no address, nothing verified until a sign-up and its code.
    assert not User.objects.filter(email="new.comer+team@example.com").exists()
    assert not EmailAddress.objects.filter(email="new.comer+team@example.com").exists()


def test_a_draft_invites_nobody_until_sent(assigner):
    c = invite(assigner, send=False)
    assert not OutboxEvent.objects.exists()

    services.commitment_send_for_handshake(actor=Actor.for_user(assigner), commitment_id=c.pk)
    outbox.outbox_event_dispatch(event_id=OutboxEvent.objects.get(commitment=c).pk)

    assert NudgeDelivery.objects.get().address == "newcomer@example.com"


@pytest.mark.processes
@pytest.mark.postgres
@pytest.mark.redis
def test_a_real_worker_mails_forty_asks_to_one_address_once(tmp_path, assigner, settings):
    settings.INVITATIONS_PER_DAY = 40
    purge_queue(os.environ["REDIS_URL"])
    env = subprocess_env(tmp_path)
    # No sweep may dispatch them: only the after-commit publish can.
    env["TEST_OUTBOX_SWEEP_GRACE"] = "3600"
    with celery_worker(env, tmp_path / "worker.log") as worker:
        worker.wait_for_output("ready.")
        asks = [invite_with(assigner, f"Request number {n}") for n in range(40)]
        wait_until(
            lambda: (
                NudgeDelivery.objects.count() == 40
                and NudgeDelivery.objects.filter(status=NudgeDeliveryStatus.DELIVERED).exists()
            ),
            what="forty invitation deliveries, one of them sent",
        )
    mails = read_mails(tmp_path / "mail")
    assert len(mails) == 1
    assert mails[0]["To"] == "newcomer@example.com"
    assert mails[0]["Subject"] == "Lead asked you to do something on Commitments"
    assert (
        NudgeDelivery.objects.get(event__commitment=asks[0]).status == NudgeDeliveryStatus.DELIVERED
    )
    # The other 39 wait for tomorrow's digest.
    assert (
        NudgeDelivery.objects.filter(is_digest=True, status=NudgeDeliveryStatus.PENDING).count()
        == 1
    )
    assert NudgeDelivery.objects.filter(status=NudgeDeliveryStatus.HELD).count() == 38


@pytest.mark.postgres
@pytest.mark.parametrize("rounds", range(3))
def test_two_workers_dispatching_asks_to_one_address_at_once_mail_it_once(
    rounds, assigner, assignee
):
    events = [
        OutboxEvent.objects.get(commitment=invite(person)).pk for person in (assigner, assignee)
    ]

    race([lambda e=e: outbox.outbox_event_dispatch(event_id=e) for e in events])

    assert NudgeDelivery.objects.count() == 2
    assert NudgeDelivery.objects.filter(is_digest=False, enqueued_at__isnull=False).count() == 1
    assert NudgeDelivery.objects.filter(is_digest=True, enqueued_at__isnull=True).count() == 1


def test_a_long_request_is_mailed_in_lines_a_reader_and_the_log_can_follow(assigner, settings):
    """A line over 998 bytes made Django send the mail quoted-printable: in the
    quick start's log the sign-up link read `?email=3Dnewcomer...`."""
    c = invite_with(assigner, "Prepare the report with every figure checked " * 40)
    (delivery_id,) = outbox.outbox_event_dispatch(event_id=OutboxEvent.objects.get(commitment=c).pk)
    nudge_send(delivery_id=delivery_id)

    (sent,) = mail.outbox
    raw = sent.message().as_string()
    assert "quoted-printable" not in raw
    assert "https://commitments.example.com/accounts/signup/?email=newcomer%40example.com" in raw
    assert max(len(line) for line in sent.body.splitlines()) <= 80
    assert sent.body.count("Prepare the report") == 40


def test_an_invitation_to_a_domain_of_an_sso_provider_says_to_sign_in_with_it(assigner):
    from accounts.models import SsoProvider

    SsoProvider.objects.create(
        name="Acme SSO",
        slug="acme-sso",
        issuer="https://sso.acme.example",
        client_id="commitments",
        domains=["acme.example"],
    )
    c = invite(assigner, email="pat@acme.example")
    (delivery_id,) = outbox.outbox_event_dispatch(event_id=OutboxEvent.objects.get(commitment=c).pk)

    assert nudge_send(delivery_id=delivery_id) == AttemptOutcome.DELIVERED

    (sent,) = mail.outbox
    body = " ".join(sent.body.split())
    assert 'People at acme.example sign in with Acme SSO: choose "Sign in with Acme SSO"' in body
    assert "sign up with this address" not in body
    assert "nothing happens unless you sign in" in body
