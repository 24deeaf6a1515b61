"""An address without an account, asked from the web, gets an invitation
e-mail: the `invited` outbox row becomes one delivery to that address (no
recipient user), sent, retried and recorded like every nudge; nothing else
is nudged, and no webhook fires."""

from __future__ import annotations

import os
import re

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core import mail

from audit.services import Actor
from commitments import services
from commitments.models import EventKind, OutboxEvent
from notifications.models import AttemptOutcome, ChannelKind, Delivery, DeliveryStatus
from notifications.sending import nudge_send
from relay import outbox
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
def _settings(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.SITE_URL = "https://commitments.example.com"
    mail.outbox = []


def invite(assigner, email="newcomer@example.com", *, send=True):
    return services.commitment_ask(
        actor=Actor.for_user(assigner),
        assignee_email=email,
        description="Water the shrubbery",
        deadline=None,
        send=send,
    )


def test_the_invited_event_becomes_one_delivery_to_the_address(assigner):
    c = invite(assigner)
    event = OutboxEvent.objects.get(commitment=c)
    assert event.kind == EventKind.INVITED

    (delivery_id,) = outbox.outbox_event_dispatch(event_id=event.pk)
    OutboxEvent.objects.filter(pk=event.pk).update(dispatched_at=None)  # dispatched again
    assert outbox.outbox_event_dispatch(event_id=event.pk) == []

    delivery = Delivery.objects.get()
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
    assert sent.subject == "Lead asks you: Water the shrubbery"
    assert "Lead (lead@example.com) asks you" in sent.body
    assert "sign up with this address (newcomer@example.com)" in sent.body
    assert "https://commitments.example.com/accounts/signup/?email=" in sent.body
    delivery = Delivery.objects.get()
    assert delivery.status == DeliveryStatus.DELIVERED
    assert [a.outcome for a in delivery.attempt_log.all()] == [AttemptOutcome.DELIVERED]


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

    assert Delivery.objects.get().address == "newcomer@example.com"


@pytest.mark.processes
@pytest.mark.postgres
@pytest.mark.redis
def test_a_real_worker_mails_the_invitation_once(tmp_path, assigner):
    purge_queue(os.environ["REDIS_URL"])
    env = subprocess_env(tmp_path)
    # No sweep may dispatch it: only the after-commit publish can.
    env["TEST_OUTBOX_SWEEP_GRACE"] = "3600"
    with celery_worker(env, tmp_path / "worker.log") as worker:
        worker.wait_for_output("ready.")
        c = invite(assigner)
        wait_until(
            lambda: Delivery.objects.filter(
                event__commitment=c, status=DeliveryStatus.DELIVERED
            ).exists(),
            what="the invitation",
        )
    mails = [m for m in read_mails(tmp_path / "mail") if "Water the shrubbery" in m["Subject"]]
    assert len(mails) == 1
    assert mails[0]["To"] == "newcomer@example.com"
    assert Delivery.objects.filter(event__commitment=c).count() == 1
