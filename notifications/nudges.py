"""Who hears about an event, and what the nudge says.

A handshake request (inbox creation, a draft sent) and a renegotiation nudge
the assignee; an acceptance, a refusal and a completion tell the assigner.
Nobody is nudged about their own act: an event whose actor is the recipient
signed in as themselves sends nothing (an act through the recipient's API token,
an external system's, still does).
"""

from __future__ import annotations

import datetime as dt
import re
from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse

from accounts.selectors import user_has_verified_primary_email
from accounts.timezones import zone_named
from audit.models import ActorKind
from commitments.answer_links import answer_path
from commitments.models import Commitment, EventKind, OutboxEvent, Status
from commitments.selectors import commitment_decline_reason
from lib.text import excerpt
from notifications.models import NudgeDelivery, Reminder, ReminderKind
from notifications.selectors import reminder_still_due, reminders_turned_off
from notifications.transports import Action, Message

TELLS_ASSIGNEE = {EventKind.HANDSHAKE_REQUESTED, EventKind.RENEGOTIATED}
TELLS_ASSIGNER = {EventKind.ACTIVATED, EventKind.REFUSED, EventKind.COMPLETED}


def nudge_recipients(event: OutboxEvent) -> list:
    commitment = event.commitment
    if event.kind in TELLS_ASSIGNEE:
        recipient = commitment.assignee
        if recipient is None:  # an invitation's (see invitation_message)
            return []
    elif event.kind in TELLS_ASSIGNER:
        recipient = commitment.assigner
    else:
        return []
    if event.actor_kind == ActorKind.USER and event.actor_user_id == recipient.pk:
        return []
    # Work is routed by address: an address its owner has not proved (or a
    # deactivated account) receives nothing.
    if not user_has_verified_primary_email(user=recipient):
        return []
    return [recipient]


def site_url(name: str, *args) -> str:
    """The absolute link to a page of the site (`reverse` plus SITE_URL),
    for messages read outside it."""
    return settings.SITE_URL + reverse(name, args=args)


def commitment_url(commitment_id) -> str:
    return site_url("commitment_detail", commitment_id)


# The answer links of a handshake request, as its nudge words them.
ANSWER_LABELS = {"accept": "Accept", "decline": "Decline", "propose": "Propose another date"}


def answer_actions(commitment: Commitment, recipient) -> tuple[Action, ...]:
    """Accept, Decline and Propose another date: signed links made for
    `recipient` and the terms the message shows (its current ones), each
    opening a page that asks to confirm (commitments.answer_links)."""
    return tuple(
        Action(
            label=label,
            url=settings.SITE_URL
            + answer_path(
                commitment_id=commitment.pk,
                user_id=recipient.pk,
                terms_version=commitment.terms_version,
                answer=answer,
            ),
        )
        for answer, label in ANSWER_LABELS.items()
    )


def format_deadline(deadline: dt.datetime | None, tz_name: str) -> str:
    """The deadline as the recipient reads it, in their own time zone."""
    if deadline is None:
        return "no deadline"
    tz = zone_named(tz_name)
    local = deadline.astimezone(tz)
    return f"{local:%a} {local.day} {local:%b %Y, %H:%M} ({tz.key})"


def _completed_by(event: OutboxEvent, commitment: Commitment) -> str:
    if event.actor_kind == ActorKind.API_TOKEN:
        system = commitment.external_system or "an integration"
        return f"{system} (through an API token)"
    if event.actor_kind == ActorKind.TRACKER:
        system = commitment.external_system or "a tracker"
        return f"{system} (through a tracker connection)"
    assignee = commitment.assignee  # set once accepted: a completion's
    if assignee is not None and event.actor_user_id == assignee.pk:
        return assignee.name
    if event.actor_user_id == commitment.assigner_id:
        return commitment.assigner.name
    return "Someone"


def nudge_message(*, event: OutboxEvent, recipient, idempotency_key: str | None = None) -> Message:
    commitment = event.commitment
    assigner = commitment.assigner
    short = excerpt(commitment.description, 60)
    by = format_deadline(commitment.deadline, getattr(recipient, "timezone", "UTC"))
    url = commitment_url(commitment.pk)
    actions: tuple[Action, ...] = ()
    if event.kind in (EventKind.HANDSHAKE_REQUESTED, EventKind.RENEGOTIATED):
        actions = answer_actions(commitment, recipient)
    if event.kind == EventKind.HANDSHAKE_REQUESTED:
        subject = f"{assigner.name} asks you: {short}"
        # Born overdue (a tracker issue assigned past its due date): say so.
        late = commitment.deadline is not None and commitment.deadline < event.occurred_at
        text = (
            f"{assigner.name} asks you to: {commitment.description}\n"
            f"By: {by}."
            + (
                " That deadline had passed already when you were asked: accepting counts "
                "it as overdue at once."
                if late
                else ""
            )
            + "\nAnswer with a link below: each opens a page that asks you to confirm."
        )
    elif event.kind == EventKind.RENEGOTIATED:
        subject = f"{assigner.name} changed a request: {short}"
        text = (
            f"{assigner.name} changed the terms and asks you again to: "
            f"{commitment.description}\nBy: {by}.\n"
            "Answer with a link below: each opens a page that asks you to confirm."
        )
    elif event.kind == EventKind.ACTIVATED:
        subject = f"{commitment.assignee_label} accepted: {short}"
        text = (
            f"{commitment.assignee_label} accepted your request: {commitment.description}\n"
            f"By: {by}."
        )
    elif event.kind == EventKind.REFUSED:
        subject = f"{commitment.assignee_label} declined: {short}"
        reason = commitment_decline_reason(commitment=commitment)
        text = (
            f"{commitment.assignee_label} declined your request: {commitment.description}\n"
            + (f"Their reason: {reason}\n" if reason else "")
            + "You can change its description or deadline and ask again."
        )
    else:
        who = _completed_by(event, commitment)
        subject = f"Completed: {short}"
        text = f"{who} completed: {commitment.description}\n(It was due: {by}.)"
    return Message(
        subject=subject, text=text, url=url, idempotency_key=idempotency_key, actions=actions
    )


# --- invitations: an address nobody has an account for (docs/security.md) ---------

# An invitation digest lists at most this many requests; the rest are counted.
INVITATION_DIGEST_LIST_MAX = 10
# What a mail program makes a link of in plain text: a scheme's "://", and a
# dot (or a look-alike full stop) before a run of letters, as in a host name
# or an address's domain. The asker's words keep them only as text.
_SCHEME = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*):(//)")
_HOST_DOT = re.compile(r"(?<=\w)[.\u3002\uff0e\uff61](?=[^\W\d_]{2})")
# A dotted IPv4 address, which some mail programs link too.
_IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")


def unlinked(text: str) -> str:
    """`text` with nothing a mail program would make a link of:
    `https://mail.example/login` reads `https[:]//mail[.]example/login`."""
    text = _SCHEME.sub(r"\1[:]\2", text)
    text = _IPV4.sub(lambda match: match.group().replace(".", "[.]"), text)
    return _HOST_DOT.sub("[.]", text)


def _quoted(text: str) -> str:
    """The asker's words, marked as theirs on every line, with no links."""
    return "\n".join(f"    | {line}" for line in unlinked(text).splitlines() or [""])


def _asker(commitment: Commitment) -> str:
    """Who asked, on one line and without links (their name is theirs to
    choose, so it is treated like their words)."""
    assigner = commitment.assigner
    return f"{unlinked(excerpt(assigner.name, 60))} ({unlinked(assigner.email)})"


def _signup_url(address: str) -> str:
    """The sign-up form with the invited address filled in (only filled in:
    the address is proved by the code mailed after sign-up)."""
    return site_url("account_signup") + "?" + urlencode({"email": address})


def _invitation_ending(address: str) -> str:
    return (
        f"To read it in Commitments and accept or decline it, sign up with this address "
        f"({address}) and type the code we then mail to it: the request waits for you in "
        "your Accord. If you did not expect this, ignore this e-mail: nothing happens unless "
        "you sign up. Commitments never asks for a password or a payment in an e-mail."
    )


def invitation_message(
    *, commitment: Commitment, address: str, idempotency_key: str | None = None
) -> Message:
    """The invitation of a request to an address with no account yet. The
    subject is ours (who asked, on which site); the request is only in the
    body, quoted and marked as the asker's words, its links made text, since
    anyone with an account may write it to any address."""
    assigner = commitment.assigner
    by = format_deadline(commitment.deadline, "UTC")
    subject = f"{excerpt(unlinked(assigner.name), 40)} asked you to do something on Commitments"
    text = (
        f"{_asker(commitment)} asked you to do something, through Commitments "
        f"({settings.SITE_URL}).\n\n"
        "Their request, in their own words (written by them, not by Commitments; web "
        "addresses in it are shown as text, not as links):\n\n"
        f"{_quoted(commitment.description)}\n\nBy: {by}.\n\n" + _invitation_ending(address)
    )
    return Message(
        subject=subject,
        text=text,
        url=_signup_url(address),
        idempotency_key=idempotency_key,
    )
    # The sign-up form opens with the address filled in (allauth's sign-up reads
    # ?email= as the field's initial value); only the code proves it.
    signup = site_url("account_signup") + "?" + urlencode({"email": commitment.invitation.email})
    return Message(subject=subject, text=text, url=signup, idempotency_key=idempotency_key)


def invitation_digest_message(
    *, commitments: list[Commitment], address: str, idempotency_key: str | None = None
) -> Message:
    """The day's digest of the requests to an address with no account yet
    that came after its invitation mail (at most one mail a day to such an
    address, notifications.dispatch): each one's asker, their words quoted,
    and its deadline, up to INVITATION_DIGEST_LIST_MAX of them."""
    count = len(commitments)
    requests = "1 more request waits" if count == 1 else f"{count} more requests wait"
    items = []
    for number, commitment in enumerate(commitments[:INVITATION_DIGEST_LIST_MAX], start=1):
        by = format_deadline(commitment.deadline, "UTC")
        items.append(
            f"{number}. {_asker(commitment)} asked:\n{_quoted(commitment.description)}\n"
            f"   By: {by}."
        )
    if count > INVITATION_DIGEST_LIST_MAX:
        items.append(f"... and {count - INVITATION_DIGEST_LIST_MAX} more.")
    text = (
        f"More requests were sent to this address ({address}) through Commitments "
        f"({settings.SITE_URL}). An address without an account gets at most one e-mail a "
        "day from us, so they come together. Each is in the words of the person who asked "
        "(written by them, not by Commitments; web addresses in them are shown as text, "
        "not as links):\n\n" + "\n\n".join(items) + "\n\n" + _invitation_ending(address)
    )
    return Message(
        subject=f"{requests} for you on Commitments",
        text=text,
        url=_signup_url(address),
        idempotency_key=idempotency_key,
    )


def _still_invited(commitment: Commitment) -> bool:
    """Still waiting for an account to answer it: not claimed since (then it
    is in the person's Accord), not moved on."""
    return commitment.assignee_id is None and commitment.status == Status.PENDING_HANDSHAKE


def invitation_delivery_message(
    delivery: NudgeDelivery, *, held=(), idempotency_key: str | None = None
) -> tuple[Message | None, list]:
    """What an invitation delivery sends: its request's invitation, or, a
    digest, the requests it holds; only those still waiting for an account.
    Returns the message (None when none still waits) and the ids of the held
    deliveries left out."""
    rows = [delivery, *held]
    waiting = [row.event.commitment for row in rows if _still_invited(row.event.commitment)]
    left_out = [row.pk for row in held if not _still_invited(row.event.commitment)]
    if not waiting:
        return None, left_out
    if delivery.is_digest:
        message = invitation_digest_message(
            commitments=waiting, address=delivery.address, idempotency_key=idempotency_key
        )
    else:
        message = invitation_message(
            commitment=waiting[0], address=delivery.address, idempotency_key=idempotency_key
        )
    return message, left_out


def sample_message(user) -> Message:
    return Message(
        subject="Test nudge from Commitments",
        text=(
            f"Hello {user.name}, this is a test. Nudges about your commitments will arrive here."
        ),
        url=site_url("notification_settings"),
    )


def digest_message(
    *, recipient, sender, events: list[OutboxEvent], idempotency_key: str | None = None
) -> Message:
    """One nudge for the requests that came over the hourly cap (NUDGE_CAP):
    each one's terms and link, oldest first."""
    tz_name = getattr(recipient, "timezone", "UTC")
    lines = []
    for event in events:
        commitment = event.commitment
        verb = "Changed" if event.kind == EventKind.RENEGOTIATED else "Asks"
        by = format_deadline(commitment.deadline, tz_name)
        lines.append(
            f"- {verb}: {commitment.description}\n  By: {by}.\n  {commitment_url(commitment.pk)}"
        )
    count = len(events)
    requests = "request" if count == 1 else "requests"
    subject = f"{sender.name} sent you {count} more {requests}"
    text = (
        f"{sender.name} sent you more than {settings.NUDGE_CAP} requests within an hour, so "
        f"these {count} were held back to come together:\n\n"
        + "\n".join(lines)
        + "\n\nAccept or decline each in Commitments."
    )
    return Message(
        subject=subject, text=text, url=site_url("accord"), idempotency_key=idempotency_key
    )


# --- reminders (notifications.reminders) -----------------------------------------


def _reminder_lines(reminder: Reminder, tz_name: str) -> tuple[str, str]:
    """A reminder's headline and its sentences, in the recipient's time zone."""
    commitment = reminder.commitment
    short = excerpt(commitment.description, 60)
    due = format_deadline(commitment.deadline, tz_name)
    if reminder.kind == ReminderKind.DUE_SOON:
        return (
            f"Due soon: {short}",
            f"A reminder of what you committed to {commitment.assigner.name}: "
            f"{commitment.description}\nDue: {due}.\nMark it completed in Commitments "
            "once it is done.",
        )
    if reminder.kind == ReminderKind.OVERDUE:
        return (
            f"Overdue: {short}",
            f"The deadline has passed for what you committed to {commitment.assigner.name}: "
            f"{commitment.description}\nIt was due: {due}.\nComplete it, or agree a new "
            f"deadline with {commitment.assigner.name}.",
        )
    since = format_deadline(reminder.moment, tz_name)
    # The name, or the invited address while it has no account (no assignee).
    asked = commitment.assignee_label
    return (
        f"Still waiting for {asked}: {short}",
        f"{asked} has not answered your request since {since}: "
        f"{commitment.description}\nBy: {due}.\nYou can change its description or deadline, "
        "or ask them yourself.",
    )


def reminder_message(
    *, recipient, reminders: list[Reminder], idempotency_key: str | None = None
) -> Message:
    """One reminder, or a digest of several that fell due within the hour
    (REMINDER_CAP_WINDOW): each names its commitment, links it and says when
    it is due in the recipient's time zone."""
    tz_name = getattr(recipient, "timezone", "UTC")
    if len(reminders) == 1:
        (reminder,) = reminders
        subject, text = _reminder_lines(reminder, tz_name)
        return Message(
            subject=f"Reminder: {subject}",
            text=text,
            url=commitment_url(reminder.commitment_id),
            idempotency_key=idempotency_key,
        )
    parts = []
    for reminder in reminders:
        headline, _ = _reminder_lines(reminder, tz_name)
        due = format_deadline(reminder.commitment.deadline, tz_name)
        parts.append(f"- {headline}\n  Due: {due}.\n  {commitment_url(reminder.commitment_id)}")
    return Message(
        subject=f"{len(reminders)} reminders about your commitments",
        text="Reminders that fell due within the hour, together:\n\n" + "\n".join(parts),
        url=site_url("accord"),
        idempotency_key=idempotency_key,
    )


# --- one delivery's message (notifications.sending) ---------------------------------


def delivery_message(delivery: NudgeDelivery, *, held=()) -> tuple[Message | None, list]:
    """What a claimed delivery sends (with the deliveries `held` in its
    digest), and the ids of held reminders left out because they are no
    longer due. No message when nothing in it is still due (a reminder)."""
    key = f"nudge-{delivery.pk}"
    if delivery.reminder_id is not None:
        assert delivery.recipient_id is not None  # reminders go to accounts
        # Only what is still due goes out; the rest is cancelled with it.
        due, left_out = [], []
        turned_off = reminders_turned_off(user_id=delivery.recipient_id)
        for row in (delivery, *held):
            if not turned_off and reminder_still_due(reminder=row.reminder):
                due.append(row.reminder)
            else:
                left_out.append(row.pk)
        if not due:
            return None, left_out
        message = reminder_message(recipient=delivery.recipient, reminders=due, idempotency_key=key)
        return message, left_out
    if delivery.recipient is None:  # an invitation, or an invitation digest
        return invitation_delivery_message(delivery, held=held, idempotency_key=key)
    event = delivery.event
    assert event is not None  # not a reminder's: an outbox event's
    if delivery.is_digest:
        message = digest_message(
            recipient=delivery.recipient,
            sender=event.commitment.assigner,
            events=[event, *(h.event for h in held)],
            idempotency_key=key,
        )
        return message, []
    message = nudge_message(event=event, recipient=delivery.recipient, idempotency_key=key)
    return message, []
