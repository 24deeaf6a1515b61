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
import uuid
from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse

from accounts.selectors import (
    invitation_sso_hint,
    users_with_verified_primary_email,
)
from accounts.timezones import zone_named
from audit.models import ActorKind
from commitments.answer_links import answer_path
from commitments.models import Commitment, EventKind, OutboxEvent, Proposal, Status
from commitments.selectors import comment_body, commitment_decline_reason, proposal_of
from lib.db import Prepared
from lib.text import excerpt
from notifications.models import DigestReason, NewsKind, NudgeDelivery, Reminder, ReminderKind
from notifications.selectors import reminder_still_due, reminders_turned_off
from notifications.transports import Action, Message

# The moves whose nudge goes to the commitment's (current) assignee, and those
# whose nudge goes to its assigner. `activated` is the assignee's answer, or,
# with a proposal in its detail, the assigner's acceptance of the assignee's
# counter-proposal; `commented` goes to whichever of the two did not write it;
# `reassigned` to the new assignee and to the one released (its detail's
# previousAssigneeId).
TELLS_ASSIGNEE = {
    EventKind.HANDSHAKE_REQUESTED,
    EventKind.RENEGOTIATED,
    EventKind.PROPOSAL_DECLINED,
    EventKind.EXTENSION_GRANTED,
    EventKind.EXTENSION_DECLINED,
    EventKind.WITHDRAWN,
    EventKind.REASSIGNED,
}
TELLS_ASSIGNER = {
    EventKind.ACTIVATED,
    EventKind.REFUSED,
    EventKind.COMPLETED,
    EventKind.PROPOSED,
    EventKind.EXTENSION_REQUESTED,
}
# The requests the nudge cap counts (one assigner's to one assignee).
CAPPED = {EventKind.HANDSHAKE_REQUESTED, EventKind.RENEGOTIATED, EventKind.REASSIGNED}
# What is asked of the recipient (NewsKind.ASKED); every other move's nudge
# answers something of theirs (NewsKind.ANSWERED), but a comment.
ASKS = {
    EventKind.HANDSHAKE_REQUESTED,
    EventKind.INVITED,
    EventKind.RENEGOTIATED,
    EventKind.PROPOSED,
    EventKind.EXTENSION_REQUESTED,
}


def _accepts_proposal(event: OutboxEvent) -> bool:
    """An `activated` made by accepting the assignee's counter-proposal."""
    return event.kind == EventKind.ACTIVATED and bool(event.detail.get("proposalId"))


def _previous_assignee_id(event: OutboxEvent) -> str | None:
    found = event.detail.get("previousAssigneeId") if event.kind == EventKind.REASSIGNED else None
    return str(found) if found else None


def news_kind(event: OutboxEvent, recipient) -> str:
    """The kind of news (NewsKind) a nudge of `event` is to `recipient`,
    which decides when it reaches them (their choice, NudgeChannel.news_*)."""
    if event.kind == EventKind.COMMENTED:
        return NewsKind.COMMENTED
    if event.kind == EventKind.REASSIGNED:
        released = _previous_assignee_id(event) == str(recipient.pk)
        return NewsKind.ANSWERED if released else NewsKind.ASKED
    return NewsKind.ASKED if event.kind in ASKS else NewsKind.ANSWERED


def _told(event: OutboxEvent) -> list:
    """Who hears of `event`, before the rules of who may (below); a
    reassignment's people are the ones its detail names
    (`nudge_recipients_many` reads them for a whole batch)."""
    commitment = event.commitment
    if event.kind == EventKind.COMMENTED:
        if event.actor_kind == ActorKind.USER and event.actor_user_id == commitment.assignee_id:
            return [commitment.assigner]
        return [commitment.assignee]
    if event.kind in TELLS_ASSIGNEE or _accepts_proposal(event):
        return [commitment.assignee]
    if event.kind in TELLS_ASSIGNER:
        return [commitment.assigner]
    return []


def nudge_recipients(event: OutboxEvent) -> list:
    """The people a nudge of `event` goes to: not the one who made the move
    (signed in as themselves), only a proved address of an active account.
    An address with no account gets the invitation instead
    (notifications.dispatch). In the order of their ids, the order in which
    the dispatch takes each one's locks (no two dispatches wait on each
    other in a circle)."""
    return nudge_recipients_many([event])[event.pk]


# Who of these people has a proved address of an active account: a read of
# every dispatch batch, compiled once per number of people (lib.db.Prepared).
_verified_people = Prepared(lambda ids: users_with_verified_primary_email().filter(pk__in=ids))


def nudge_recipients_many(events: list[OutboxEvent]) -> dict[int, list]:
    """`nudge_recipients` of each event of a batch, by event id, in one
    query for the batch (who of them has a proved address of an active
    account, and the people a reassignment names)."""
    named: dict[int, list[str]] = {}
    told: dict[int, list] = {}
    for event in events:
        if event.kind == EventKind.REASSIGNED:
            # The one this move asked (none for an address with no account:
            # the invitation) and the one it released, as the move named them.
            ids = [event.detail.get("assigneeId"), _previous_assignee_id(event)]
            named[event.pk] = [str(person) for person in ids if person]
        else:
            told[event.pk] = _told(event)
    wanted = {str(p) for ids in named.values() for p in ids}
    wanted |= {str(person.pk) for people in told.values() for person in people if person}
    verified = (
        {str(user.pk): user for user in _verified_people({uuid.UUID(p) for p in wanted})}
        if wanted
        else {}
    )
    found: dict[int, list] = {}
    for event in events:
        people = (
            [verified[p] for p in named[event.pk] if p in verified]
            if event.pk in named
            else told[event.pk]
        )
        recipients: list = []
        for recipient in people:
            if recipient is None or recipient in recipients:
                continue
            if event.actor_kind == ActorKind.USER and event.actor_user_id == recipient.pk:
                continue
            # Work is routed by address: an address its owner has not proved
            # (or a deactivated account) receives nothing.
            if str(recipient.pk) not in verified:
                continue
            recipients.append(recipient)
        found[event.pk] = sorted(recipients, key=lambda user: str(user.pk))
    return found


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


def _answer_actions_for(event: OutboxEvent, recipient) -> tuple[Action, ...]:
    """The answer links of a nudge that asks `recipient` for the handshake: a
    request, a renegotiated one, or one handed to them; none otherwise (nor
    in a message that lists several moves)."""
    asks = event.kind in (EventKind.HANDSHAKE_REQUESTED, EventKind.RENEGOTIATED) or (
        event.kind == EventKind.REASSIGNED and _previous_assignee_id(event) != str(recipient.pk)
    )
    commitment = event.commitment
    if not asks or commitment.status != Status.PENDING_HANDSHAKE:
        return ()
    return answer_actions(commitment, recipient)


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


def _proposal(event: OutboxEvent) -> Proposal | None:
    """The proposal a move was about (its detail's proposalId), if any."""
    proposal_id = event.detail.get("proposalId")
    if not proposal_id:
        return None
    return proposal_of(commitment_id=event.commitment_id, proposal_id=proposal_id)


def _comment_body(event: OutboxEvent) -> str:
    comment_id = event.detail.get("commentId")
    if not comment_id:
        return ""
    return comment_body(commitment_id=event.commitment_id, comment_id=comment_id) or ""


def quoted(text: str) -> str:
    """Someone's words (a comment, a note) set apart as theirs: every line
    marked `    | `, which a wrapped mail line keeps (lib.text.wrapped_for_mail).
    Plain text: each transport escapes what its channel would read as markup
    (Slack's `<` `>` `&`; Teams' lines are plain TextRuns)."""
    return "\n".join(f"    | {line}" for line in text.splitlines() or [""])


def _note(label: str, note: str) -> str:
    return f"{label}:\n{quoted(note)}\n" if note.strip() else ""


def _actor_name(event: OutboxEvent, commitment: Commitment) -> str:
    """Who made the move, as the nudge names them."""
    if event.actor_kind == ActorKind.API_TOKEN:
        return f"{commitment.external_system or 'an integration'} (through an API token)"
    if event.actor_kind == ActorKind.TRACKER:
        return f"{commitment.external_system or 'a tracker'} (through a tracker connection)"
    if event.actor_user_id == commitment.assignee_id and commitment.assignee is not None:
        return commitment.assignee.name
    return commitment.assigner.name


def headline_and_text(event: OutboxEvent, recipient) -> tuple[str, str]:
    """What a nudge of `event` says to `recipient`: a headline (the subject)
    and plain sentences, the deadline in the recipient's time zone."""
    commitment = event.commitment
    assigner = commitment.assigner
    short = excerpt(commitment.description, 60)
    tz_name = getattr(recipient, "timezone", "UTC")
    by = format_deadline(commitment.deadline, tz_name)
    kind = event.kind
    if kind == EventKind.HANDSHAKE_REQUESTED or (
        kind == EventKind.REASSIGNED and _previous_assignee_id(event) != str(recipient.pk)
    ):
        handed = kind == EventKind.REASSIGNED
        # Born overdue (a tracker issue assigned past its due date): say so.
        late = commitment.deadline is not None and commitment.deadline < event.occurred_at
        return (
            f"{assigner.name} {'hands you' if handed else 'asks you'}: {short}",
            (
                f"{assigner.name} handed you a request someone else was asked before: "
                if handed
                else f"{assigner.name} asks you to: "
            )
            + f"{commitment.description}\nBy: {by}."
            + (
                " That deadline had passed already when you were asked: accepting counts "
                "it as overdue at once."
                if late
                else ""
            )
            + "\nAccept, decline or propose other terms in Commitments.",
        )
    if kind == EventKind.REASSIGNED:
        return (
            f"{assigner.name} released you from: {short}",
            f"{assigner.name} handed this request to someone else, so you no longer need "
            f"to do it: {commitment.description}",
        )
    if kind == EventKind.RENEGOTIATED:
        return (
            f"{assigner.name} changed a request: {short}",
            f"{assigner.name} changed the terms and asks you again to: "
            f"{commitment.description}\nBy: {by}.\nAccept or decline it in Commitments.",
        )
    if _accepts_proposal(event):
        return (
            f"{assigner.name} accepted your terms: {short}",
            f"{assigner.name} accepted the terms you proposed: {commitment.description}\n"
            f"By: {by}.\nIt is Active now: you committed to it.",
        )
    if kind == EventKind.ACTIVATED:
        return (
            f"{commitment.assignee_label} accepted: {short}",
            f"{commitment.assignee_label} accepted your request: {commitment.description}\n"
            f"By: {by}.",
        )
    if kind == EventKind.REFUSED:
        reason = commitment_decline_reason(commitment=commitment)
        return (
            f"{commitment.assignee_label} declined: {short}",
            f"{commitment.assignee_label} declined your request: {commitment.description}\n"
            + (f"Their reason: {reason}\n" if reason else "")
            + "You can change its description or deadline and ask again.",
        )
    if kind == EventKind.COMPLETED:
        who = _completed_by(event, commitment)
        return (
            f"Completed: {short}",
            f"{who} completed: {commitment.description}\n(It was due: {by}.)",
        )
    if kind == EventKind.COMMENTED:
        who = _actor_name(event, commitment)
        return (
            f"{who} commented: {short}",
            f"{who} commented on: {commitment.description}\n{quoted(_comment_body(event))}",
        )
    if kind == EventKind.WITHDRAWN:
        who = _actor_name(event, commitment)
        reason = str(event.detail.get("reason") or "")
        return (
            f"{who} withdrew: {short}",
            f"{who} withdrew this request, so you no longer need to do it: "
            f"{commitment.description}\n" + _note("Their reason", reason),
        )
    proposal = _proposal(event)
    assignee_name = commitment.assignee_label
    if kind == EventKind.PROPOSED:
        lines = [f"{assignee_name} proposes other terms for your request: {short}"]
        if proposal is not None and proposal.deadline is not None:
            proposed_by = format_deadline(proposal.deadline, tz_name)
            asked_by = format_deadline(proposal.previous_deadline, tz_name)
            lines.append(f"Proposed deadline: {proposed_by} (you asked: {asked_by}).")
        if proposal is not None and proposal.description is not None:
            lines.append(f"Proposed wording:\n{quoted(proposal.description)}")
        note = proposal.note if proposal is not None else ""
        return (
            f"{assignee_name} proposes other terms: {short}",
            "\n".join(lines)
            + "\n"
            + _note("Their note", note)
            + "Accept or decline the proposal in Commitments.",
        )
    if kind == EventKind.EXTENSION_REQUESTED:
        new_by = format_deadline(proposal.deadline if proposal else None, tz_name)
        old_by = format_deadline(proposal.previous_deadline if proposal else None, tz_name)
        late = bool(event.detail.get("afterDeadline")) or (
            proposal is not None
            and proposal.previous_deadline is not None
            and proposal.previous_deadline < event.occurred_at
        )
        return (
            f"{assignee_name} asks for more time: {short}",
            f"{assignee_name} asks for a later deadline for: {commitment.description}\n"
            f"From: {old_by}\nTo: {new_by}\n"
            + ("They asked after the deadline had passed.\n" if late else "")
            + _note("Their note", proposal.note if proposal else "")
            + "Grant or decline it in Commitments.",
        )
    answer = proposal.answer_note if proposal is not None else ""
    if kind == EventKind.PROPOSAL_DECLINED:
        return (
            f"{assigner.name} declined your proposal: {short}",
            f"{assigner.name} declined the terms you proposed; the request waits for your "
            f"answer on its own terms: {commitment.description}\nBy: {by}.\n"
            + _note("Their note", answer)
            + "Accept, decline or propose other terms in Commitments.",
        )
    if kind == EventKind.EXTENSION_GRANTED:
        return (
            f"{assigner.name} gave you more time: {short}",
            f"{assigner.name} granted the later deadline you asked for: "
            f"{commitment.description}\nNew deadline: {by}.",
        )
    if kind == EventKind.EXTENSION_DECLINED:
        return (
            f"{assigner.name} declined more time: {short}",
            f"{assigner.name} declined the later deadline you asked for: "
            f"{commitment.description}\nThe deadline stays: {by}.\n" + _note("Their note", answer),
        )
    return (f"{event.get_kind_display()}: {short}", commitment.description)


def nudge_message(*, event: OutboxEvent, recipient, idempotency_key: str | None = None) -> Message:
    subject, text = headline_and_text(event, recipient)
    actions = _answer_actions_for(event, recipient)
    if actions:
        text = (
            text.rstrip("\n")
            + "\nOr answer with a link below: each opens a page that asks you to confirm."
        )
    return Message(
        subject=subject,
        text=text.rstrip("\n"),
        url=commitment_url(event.commitment_id),
        idempotency_key=idempotency_key,
        actions=actions,
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
    # An address of a domain whose people must use an SSO provider is told to
    # sign in with it: the password sign-up would refuse it.
    hint = invitation_sso_hint(address)
    if hint is not None:
        return (
            f"To read it in Commitments and accept or decline it: {hint} If you did not "
            "expect this, ignore this e-mail: nothing happens unless you sign in. Commitments "
            "never asks for a password or a payment in an e-mail."
        )
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
    if reminder.kind == ReminderKind.PROPOSAL_WAITING:
        asking = commitment.assignee_label
        return (
            f"{asking} waits for your answer: {short}",
            f"{asking} proposed other terms or asked for more time on {since}, and waits "
            f"for your answer: {commitment.description}\nBy: {due}.\nAccept or decline it "
            "in Commitments.",
        )
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


def _when(row: NudgeDelivery) -> tuple:
    """When the news of a row happened: its move, or its reminder's making."""
    if row.reminder is not None:
        return (row.reminder.created_at, 1, row.created_at)
    assert row.event is not None
    return (row.event.occurred_at, 0, row.event_id)


def together_message(
    delivery: NudgeDelivery, *, held=(), idempotency_key: str | None = None
) -> tuple[Message | None, list]:
    """One message for the news gathered in a digest of moves close together
    (NUDGE_COALESCE_WINDOW) or in the person's daily digest (DIGEST_HOUR):
    each item's headline, its sentences and its link, in the order they
    happened. Reminders no longer due (or turned off) are left out; returns
    the message (None when nothing is left) and the ids of held rows left out."""
    recipient = delivery.recipient
    assert recipient is not None  # digests of moves and the daily one go to accounts
    tz_name = getattr(recipient, "timezone", "UTC")
    reminders_off = reminders_turned_off(user_id=recipient.pk)
    items: list[str] = []
    left_out: list = []
    for row in sorted([delivery, *held], key=_when):
        if row.reminder is not None:
            if reminders_off or not reminder_still_due(reminder=row.reminder):
                if row.pk != delivery.pk:
                    left_out.append(row.pk)
                continue
            headline, text = _reminder_lines(row.reminder, tz_name)
            headline, url = f"Reminder: {headline}", commitment_url(row.reminder.commitment_id)
        else:
            assert row.event is not None
            headline, text = headline_and_text(row.event, recipient)
            url = commitment_url(row.event.commitment_id)
        body = "\n".join(f"   {line}" for line in text.rstrip("\n").splitlines())
        items.append(f"{len(items) + 1}. {headline}\n{body}\n   {url}")
    if not items:
        return None, left_out
    count = f"{len(items)} update" + ("" if len(items) == 1 else "s")
    if delivery.digest_reason == DigestReason.DAILY:
        subject = f"Your daily digest: {count}"
        opening = (
            "The news you chose to get once a day (Settings, Notifications), in the order "
            "it happened:"
        )
    else:
        subject = f"{count} about your commitments"
        opening = (
            "These came within a few minutes of each other, so they come in one message, "
            "in the order they happened:"
        )
    message = Message(
        subject=subject,
        text=opening + "\n\n" + "\n\n".join(items),
        url=site_url("accord"),
        idempotency_key=idempotency_key,
    )
    return message, left_out


def delivery_message(delivery: NudgeDelivery, *, held=()) -> tuple[Message | None, list]:
    """What a claimed delivery sends (with the deliveries `held` in its
    digest), and the ids of held reminders left out because they are no
    longer due. No message when nothing in it is still due (a reminder)."""
    key = f"nudge-{delivery.pk}"
    if delivery.is_digest and delivery.digest_reason != DigestReason.CAP:
        return together_message(delivery, held=held, idempotency_key=key)
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
