"""Pages about one commitment: its detail page with its handshake buttons, the
terms form, the conversation's moves (commitments.forms has their forms) and
the confirmations. The Accord and asking are in views.accord, the dashboard in
views.dashboard."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST, require_safe

from accounts.requests import AuthenticatedRequest
from audit.models import ActorKind, AuditAction
from audit.services import Actor
from commitments import selectors, services
from commitments.errors import (
    AddressNotAskable,
    CommentInvalid,
    CommitmentNotFound,
    NothingChanged,
    NotPermitted,
    ProposalAlreadyOpen,
    ProposalInvalid,
    ProposalNotOpen,
    ReassignInvalid,
    TermsChanged,
)
from commitments.forms import (
    CommentForm,
    ExtensionForm,
    ProposalAnswerForm,
    ProposeForm,
    ReassignForm,
)
from commitments.models import DESCRIPTION_MAX, NOTE_MAX, Commitment, ProposalState, Status
from commitments.views import conversation as conv
from commitments.views.errors import maps_domain_errors
from lib.forms import TextField

# Audit actions as the timeline words them; anything else is shown as its name.
TIMELINE_WORDS = {
    AuditAction.CREATED: "Asked for a handshake",
    AuditAction.DRAFT_CREATED: "Drafted",
    AuditAction.DRAFT_EDITED: "Edited the draft",
    AuditAction.SENT_FOR_HANDSHAKE: "Sent for handshake",
    AuditAction.ACCEPTED: "Accepted",
    AuditAction.DECLINED: "Declined",
    AuditAction.COMPLETED: "Marked completed",
    AuditAction.RENEGOTIATED: "Renegotiated",
    AuditAction.WITHDRAWN: "Withdrew it",
    AuditAction.REASSIGNED: "Reassigned it",
}
# Records of what a tracker did, worded when recorded (their payload's "words":
# "Closed in GitHub as not planned"), with the generic words as a fallback.
TIMELINE_WORDS_RECORDED = {
    AuditAction.CLOSED_NOT_DONE: "Closed in the tracker without being done",
    AuditAction.SOURCE_DEADLINE_CHANGED: "The tracker's due date changed",
}


def _words(event) -> str:
    if event.action == AuditAction.EXTERNAL_REF_CHANGED:
        old, new = event.payload.get("previousExternalId"), event.payload.get("externalId")
        return f"The issue moved: {old} → {new}"
    if event.action in TIMELINE_WORDS_RECORDED:
        return event.payload.get("words") or TIMELINE_WORDS_RECORDED[event.action]
    return TIMELINE_WORDS.get(event.action, event.action.replace("_", " ").capitalize())


def _timeline_who(event, *, viewer) -> dict:
    """Who made a timeline event, for the page. A token is named by its name
    (as it was when it acted), with its owner; its display prefix only to its
    owner, and only for events recorded before tokens were named."""
    if event.actor_kind == ActorKind.SYSTEM:
        return {"kind": "system"}
    if event.actor_kind == ActorKind.API_TOKEN:
        return {
            "kind": "token",
            "user": event.user,
            "token_name": event.token_name,
            "token_prefix": event.token_prefix if viewer.pk == event.user_id else "",
        }
    if event.actor_kind == ActorKind.TRACKER:
        # token_name holds the connection's label as it was ("GitHub connection “acme”").
        return {"kind": "tracker", "user": event.user, "label": event.token_name}
    return {"kind": "user", "user": event.user}


def _when(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value else None


def _terms_diff(event) -> list[dict]:
    """What a renegotiation or a draft edit changed: old → new per term. The
    old values are in the payload's `previous`; events recorded before it was
    written say only the new value."""
    if event.action == AuditAction.RENEGOTIATED:
        new = event.payload.get("changes", {})
    elif event.action == AuditAction.DRAFT_EDITED:
        new = event.payload
    else:
        return []
    old = event.payload.get("previous", {})
    diff = []
    if "description" in new:
        diff.append(
            {
                "term": "description",
                "known_old": "description" in old,
                "old": old.get("description"),
                "new": new["description"],
            }
        )
    if "deadline" in new:
        diff.append(
            {
                "term": "deadline",
                "known_old": "deadline" in old,
                "old": _when(old.get("deadline")),
                "new": _when(new["deadline"]),
            }
        )
    return diff


def _reassigned_to(event, commitment: Commitment, *, viewer) -> str:
    """Who a reassignment asked, from its audit row (no query): "you", the
    account's name as it was then, or the address invited. A row written
    before the row said so names the person only if they are still asked."""
    payload = event.payload or {}
    if viewer.pk is not None and payload.get("assigneeId") == str(viewer.pk):
        return "you"
    if payload.get("assigneeName") or payload.get("assigneeEmail"):
        return payload.get("assigneeName") or payload["assigneeEmail"]
    if payload.get("assigneeId") and payload["assigneeId"] == str(commitment.assignee_id):
        return commitment.assignee_label
    if payload.get("invitationId") and payload["invitationId"] == str(commitment.invitation_id):
        return commitment.assignee_label
    return ""


def _moved_words(event, commitment: Commitment, *, viewer) -> str:
    if event.action == AuditAction.REASSIGNED:
        to = _reassigned_to(event, commitment, viewer=viewer)
        return f"Reassigned it to {to}" if to else _words(event)
    return _words(event)


def _timeline(commitment: Commitment, *, viewer) -> list[dict]:
    return [
        {
            "event": event,
            "words": _moved_words(event, commitment, viewer=viewer),
            "who": _timeline_who(event, viewer=viewer),
            "diff": _terms_diff(event),
            # The reason given with a decline (commitments.services.commitment_decline
            # keeps it on the audit row): the asker reads it here, not only in the nudge.
            "reason": (event.payload or {}).get("reason", "")
            if event.action in (AuditAction.DECLINED, AuditAction.WITHDRAWN)
            else "",
            # The note given with a reassignment (its audit row keeps it).
            "note": (event.payload or {}).get("note", "")
            if event.action == AuditAction.REASSIGNED
            else "",
        }
        for event in selectors.commitment_timeline(commitment=commitment)
    ]


# The transition times a commitment keeps, as the page names them.
MOMENTS = (
    ("created_at", "Created"),
    ("activated_at", "Accepted"),
    ("renegotiated_at", "Renegotiated"),
    ("refused_at", "Declined"),
    ("completed_at", "Completed"),
    ("withdrawn_at", "Withdrawn"),
)


def _moments(commitment: Commitment) -> list[dict]:
    """The transition times in the order they happened (a decline, then a
    renegotiation, reads in that order), as the timeline below them does."""
    moments = [
        {"label": label, "at": getattr(commitment, name)}
        for name, label in MOMENTS
        if getattr(commitment, name)
    ]
    return sorted(moments, key=lambda moment: moment["at"])  # stable: ties keep MOMENTS' order


class TermsForm(forms.Form):
    """What the assigner may change before a handshake completed. The deadline
    is read and shown in the viewer's time zone (UserTimezoneMiddleware)."""

    description = TextField(
        max_length=DESCRIPTION_MAX, strip=True, widget=forms.Textarea(attrs={"rows": 3})
    )
    deadline = forms.DateTimeField(
        required=False,
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text="Leave empty for no deadline.",
    )
    # The version of the terms this form showed: an edit of terms changed
    # since (another tab) is refused rather than silently overwriting them.
    terms_version = forms.IntegerField(required=False, widget=forms.HiddenInput)


# The name of the submit button that confirms a renegotiation to a past deadline.
CONFIRM_PAST_DEADLINE = "confirm_past_deadline"


def posted_terms_version(value: object) -> int:
    """The terms version a form posted; a missing or malformed one is no
    version at all (0, which no commitment has), so the move is refused."""
    try:
        return int(str(value))
    except ValueError:
        return 0


def _visible(request: HttpRequest, commitment_id: uuid.UUID) -> Commitment:
    """The commitment, if the signed-in person may see it (CommitmentNotFound,
    a 404 through maps_domain_errors, when not)."""
    # Its views send the signed-out to sign in first.
    assert request.user.is_authenticated
    commitment = selectors.commitment_get_visible(user=request.user, commitment_id=commitment_id)
    if commitment is None:
        raise CommitmentNotFound()
    return commitment


def _terms_changed(
    commitment: Commitment, exc: TermsChanged, *, message: str, sent: dict | None = None
) -> dict:
    """What the page shows when a form was posted from terms changed since:
    why nothing happened, and what changed after the version shown."""
    return {
        "message": message,
        "changes": selectors.commitment_terms_changes_since(
            commitment=commitment, terms_version=exc.shown_version
        ),
        "sent": sent,
    }


def _conversation_context(
    request: HttpRequest, commitment: Commitment, timeline: list[dict], bound: dict[str, Any]
) -> dict[str, Any]:
    """The conversation's part of the page: the open proposal, the moves the
    viewer may make with their forms (a form posted with errors comes back
    bound), the conversation in time order and the deadlines' history."""
    assert request.user.is_authenticated
    # Every proposal and comment is written with its audit row (one write):
    # a commitment whose timeline has none has none, and costs no query more.
    said = {entry["event"].action for entry in timeline}
    proposals = (
        list(selectors.commitment_proposals(commitment=commitment))
        if said & {AuditAction.PROPOSED, AuditAction.EXTENSION_REQUESTED}
        else []
    )
    comments = (
        list(selectors.commitment_comments(commitment=commitment))
        if AuditAction.COMMENTED in said
        else []
    )
    open_proposal = next((p for p in proposals if p.state == ProposalState.OPEN), None)
    moves = selectors.conversation_moves_for(
        user=request.user, commitment=commitment, open_proposal=open_proposal
    )
    unbound: dict[str, tuple[str, Callable[[], Any]]] = {
        "propose_form": (
            "propose",
            lambda: ProposeForm(
                initial={"terms_version": commitment.terms_version}, commitment=commitment
            ),
        ),
        # More time moves a deadline: none, nothing to ask (ProposalInvalid).
        "extension_form": ("request_extension", ExtensionForm),
        "comment_form": ("comment", CommentForm),
        "reassign_form": ("reassign", ReassignForm),
    }
    if commitment.deadline is None:
        moves.discard("request_extension")
    forms_shown = {
        name: bound.get(name) or make() for name, (move, make) in unbound.items() if move in moves
    }
    return {
        "moves": moves,
        "open_proposal": open_proposal,
        "conversation": conv.conversation(
            timeline=timeline, proposals=proposals, comments=comments
        ),
        "deadline_history": selectors.commitment_deadline_history(
            commitment=commitment,
            events=[entry["event"] for entry in timeline],
            proposals=proposals,
        ),
        "now": timezone.now(),
        "note_max": NOTE_MAX,
        **forms_shown,
    }


def _render_detail(
    request: HttpRequest,
    commitment: Commitment,
    *,
    terms_form: TermsForm | None = None,
    terms_changed: dict | None = None,
    past_deadline: dt.datetime | None = None,
    bound: dict[str, Any] | None = None,
    problem: str = "",
    status: int | None = None,
) -> HttpResponse:
    """The commitment's page. `bound`: forms of the conversation posted with
    errors, by their context name; `problem`: why a move was not made, said
    at the top of the page (with `status`)."""
    # Its views send the signed-out to sign in first.
    assert request.user.is_authenticated
    terms_move = selectors.commitment_terms_move_for(user=request.user, commitment=commitment)
    if terms_form is None and terms_move is not None:
        terms_form = TermsForm(
            initial={
                "description": commitment.description,
                "deadline": commitment.deadline,
                "terms_version": commitment.terms_version,
            }
        )
    timeline = _timeline(commitment, viewer=request.user)
    declines = [
        entry["reason"] for entry in timeline if entry["event"].action == AuditAction.DECLINED
    ]
    if status is None:
        status = 200
        if terms_changed is not None:
            status = 409
        elif (terms_form is not None and terms_form.errors) or any(
            form.errors for form in (bound or {}).values()
        ):
            status = 400
    return render(
        request,
        "commitments/detail.html",
        {
            "commitment": commitment,
            "c": commitment,  # for the shared _deadline.html
            "actions": selectors.commitment_actions_for(user=request.user, commitment=commitment),
            "terms_move": terms_move,
            "terms_form": terms_form,
            "timeline": timeline,
            "moments": _moments(commitment),
            # The reason of the latest decline, beside its time while it stands.
            "decline_reason": declines[-1] if declines else "",
            "terms_changed": terms_changed,
            "deep_link": selectors.commitment_deep_link(viewer=request.user, commitment=commitment),
            # A renegotiation to a deadline already past, not yet confirmed.
            "past_deadline": past_deadline,
            "problem": problem,
            **_conversation_context(request, commitment, timeline, bound or {}),
        },
        status=status,
    )


@require_safe
@login_required
@maps_domain_errors
def commitment_detail(request: AuthenticatedRequest, commitment_id: uuid.UUID) -> HttpResponse:
    return _render_detail(request, _visible(request, commitment_id))


def _terms_not_saved(request: HttpRequest, exc: TermsChanged, view_kwargs: dict) -> HttpResponse:
    """Two tabs, or two people: the form showed terms that are no longer the
    current ones. Nothing is saved; the form comes back with the current
    terms, and what was sent is shown so it can be redone."""
    current = _visible(request, view_kwargs["commitment_id"])
    form = TermsForm(request.POST)
    form.is_valid()  # it was, or the service would not have been called
    changed = _terms_changed(
        current,
        exc,
        message=(
            "Your change was not saved: the terms were changed elsewhere after this form "
            "was opened. The form now shows the current terms; make your change again "
            "on them if it still applies."
        ),
        sent={
            "description": form.cleaned_data["description"],
            "deadline": form.cleaned_data["deadline"],
        },
    )
    return _render_detail(request, current, terms_changed=changed)


@require_POST
@maps_domain_errors(on_terms_changed=_terms_not_saved)
def commitment_change_terms(request: HttpRequest, commitment_id: uuid.UUID) -> HttpResponse:
    """The assigner edits a Draft, or renegotiates before a handshake completed
    (the assignee is then asked again), through the same services as ever."""
    detail_url = reverse("commitment_detail", args=[commitment_id])
    if not request.user.is_authenticated:
        return redirect_to_login(detail_url)
    commitment = _visible(request, commitment_id)
    form = TermsForm(request.POST)
    if not form.is_valid():
        return _render_detail(request, commitment, terms_form=form)
    actor = Actor.for_user(request.user)
    deadline = form.cleaned_data["deadline"]
    # The field shows whole minutes: the minute shown back, unchanged, keeps a
    # stored deadline that has seconds (an inbox may send them).
    if commitment.deadline and deadline == commitment.deadline.replace(second=0, microsecond=0):
        deadline = commitment.deadline
    if (
        commitment.status != Status.DRAFT
        and deadline is not None
        and deadline < timezone.now()
        and not request.POST.get(CONFIRM_PAST_DEADLINE)
    ):
        # Asking someone to accept a deadline that has passed is rarely meant:
        # say so, and let the second submit ("renegotiate anyway") confirm it.
        return _render_detail(request, commitment, terms_form=form, past_deadline=deadline)
    terms = {
        "description": form.cleaned_data["description"],
        "deadline": deadline,
        "terms_version": posted_terms_version(form.cleaned_data["terms_version"]),
    }
    try:
        if commitment.status == Status.DRAFT:
            services.commitment_update_draft(actor=actor, commitment_id=commitment_id, **terms)
            messages.success(request, "Draft saved.")
        else:
            services.commitment_renegotiate(actor=actor, commitment_id=commitment_id, **terms)
            messages.success(
                request,
                f"Renegotiated: {commitment.assignee_label} is asked for the handshake again.",
            )
    except NothingChanged:
        messages.info(request, "Nothing changed: edit the description or the deadline first.")
    return redirect(detail_url)


# action name -> (service, message on success)
HANDSHAKE_ACTIONS: dict[str, tuple[Callable[..., object], str]] = {
    "send": (services.commitment_send_for_handshake, "Sent for handshake."),
    "accept": (services.commitment_accept, "Accepted: the commitment is now active."),
    "decline": (services.commitment_decline, "Declined."),
    "complete": (services.commitment_complete, "Marked completed."),
    "withdraw": (services.commitment_withdraw, "Withdrawn: it no longer counts for anyone."),
}
# The moves that answer the terms shown: their forms post the terms version.
ANSWERS_TO_TERMS = {"accept": "accepted", "decline": "declined"}


def _done_url(request: HttpRequest, view_kwargs: dict) -> str:
    """Where a move goes back to: posted from the Accord, there (with its
    filters and pages); only that page, so the field cannot send anyone
    elsewhere. Else the commitment's page."""
    back = request.POST.get("next", "")
    if back == "/" or back.startswith("/?"):
        return back
    return reverse("commitment_detail", args=[view_kwargs["commitment_id"]])


def _answer_not_taken(request: HttpRequest, exc: TermsChanged, view_kwargs: dict) -> HttpResponse:
    """An accept or decline posted from terms changed since: nothing is done,
    and the page shows the new terms to answer again."""
    current = _visible(request, view_kwargs["commitment_id"])
    changed = _terms_changed(
        current,
        exc,
        message=(
            f"Nothing was {ANSWERS_TO_TERMS[view_kwargs['action']]}: {current.assigner.name} "
            "changed the terms after this page was opened. Read the new terms below and "
            "answer again."
        ),
    )
    return _render_detail(request, current, terms_changed=changed)


@require_POST
@maps_domain_errors(back=_done_url, on_terms_changed=_answer_not_taken)
def commitment_act(request: HttpRequest, commitment_id: uuid.UUID, action: str) -> HttpResponse:
    """One handshake move through its service, then back to the detail page."""
    if not request.user.is_authenticated:
        # Back to the page after signing in, not to this POST-only address.
        return redirect_to_login(reverse("commitment_detail", args=[commitment_id]))
    # Someone who cannot see the commitment learns nothing about it, not even
    # whether the move would have been refused for its status.
    _visible(request, commitment_id)
    service, success = HANDSHAKE_ACTIONS[action]
    extra: dict[str, Any] = {}
    if action in ANSWERS_TO_TERMS:
        extra["terms_version"] = posted_terms_version(request.POST.get("terms_version"))
    if action in ("decline", "withdraw"):
        extra["reason"] = request.POST.get("reason", "")[: services.DECLINE_REASON_MAX]
    service(actor=Actor.for_user(request.user), commitment_id=commitment_id, **extra)
    messages.success(request, success)
    return redirect(_done_url(request, {"commitment_id": commitment_id}))


# The moves that ask to confirm first (they cannot be undone), and what the
# confirmation page says of each.
CONFIRMED_MOVES = {
    "decline": {
        "title": "Decline this commitment?",
        "button": "Decline",
        "style": "danger",
    },
    "complete": {
        "title": "Mark this commitment completed?",
        "button": "Mark completed",
        "style": "primary",
    },
    "withdraw": {
        "title": "Withdraw this commitment?",
        "button": "Withdraw",
        "style": "danger",
    },
}
# The confirmation's "You cannot <verb> this commitment now".
CONFIRM_VERBS = {"decline": "decline", "complete": "complete", "withdraw": "withdraw"}


@require_safe
@login_required
@maps_domain_errors
def commitment_confirm(
    request: AuthenticatedRequest, commitment_id: uuid.UUID, action: str
) -> HttpResponse:
    """The page between the button and the move for what cannot be undone
    (decline, complete): the terms once more, and the one POST form that makes
    the move. A plain page, so it works without JavaScript."""
    commitment = _visible(request, commitment_id)
    detail_url = reverse("commitment_detail", args=[commitment_id])
    allowed = selectors.commitment_actions_for(user=request.user, commitment=commitment)
    if action == "withdraw":
        allowed = selectors.conversation_moves_for(
            user=request.user, commitment=commitment, open_proposal=None
        )
    if action not in allowed:
        status = commitment.get_status_display()
        verb = CONFIRM_VERBS[action]
        messages.error(request, f"You cannot {verb} this commitment now: its status is {status}.")
        return redirect(detail_url)
    return render(
        request,
        "commitments/confirm.html",
        {
            "commitment": commitment,
            "c": commitment,  # for the shared _deadline.html
            "action": action,
            "move": CONFIRMED_MOVES[action],
            "post_url": reverse(f"commitment_{action}", args=[commitment_id]),
            "detail_url": detail_url,
            "now": timezone.now(),
            "reason_max": services.DECLINE_REASON_MAX,
        },
    )


# --- the conversation's moves --------------------------------------------------------


def _signed_in_or_back(request: HttpRequest, commitment_id: uuid.UUID) -> HttpResponse | None:
    """A signed-out POST goes to sign in, and back to the page (not to this
    POST-only address)."""
    if not request.user.is_authenticated:
        return redirect_to_login(reverse("commitment_detail", args=[commitment_id]))
    return None


def _form_error(
    request: HttpRequest, commitment_id: uuid.UUID, name: str, form: Any, message: str
) -> HttpResponse:
    """The page again, the form bound with what was sent and `message` as its
    error (400): nothing was done."""
    form.add_error(None, message)
    return _render_detail(request, _visible(request, commitment_id), bound={name: form})


def _not_done(request: HttpRequest, commitment_id: uuid.UUID, message: str) -> HttpResponse:
    """The page as it is now, saying why nothing was done (409): another move
    came first (an answer, a proposal)."""
    return _render_detail(request, _visible(request, commitment_id), problem=message, status=409)


def _not_permitted(request: HttpRequest, exc: NotPermitted, view_kwargs: dict) -> HttpResponse:
    """A move this person may not make (a page left open from before a
    reassignment, a hand-made POST): the page, saying so (403)."""
    return _render_detail(
        request,
        _visible(request, view_kwargs["commitment_id"]),
        problem=f"Nothing was done. {exc}.",
        status=403,
    )


def _proposal_not_sent(request: HttpRequest, exc: TermsChanged, view_kwargs: dict) -> HttpResponse:
    """A proposal on terms changed since it was written: not sent; the page
    shows the new terms to answer (or propose on) again."""
    current = _visible(request, view_kwargs["commitment_id"])
    changed = _terms_changed(
        current,
        exc,
        message=(
            f"Your proposal was not sent: {current.assigner.name} changed the terms after "
            "this page was opened. Read the new terms below; accept them, decline them, or "
            "propose again."
        ),
    )
    return _render_detail(request, current, terms_changed=changed)


def _same_minute(value: dt.datetime | None, current: dt.datetime | None) -> bool:
    """The field shows whole minutes: the current deadline, sent back unchanged."""
    return (
        value is not None
        and current is not None
        and value == current.replace(second=0, microsecond=0)
    )


@require_POST
@maps_domain_errors(on_terms_changed=_proposal_not_sent, on_not_permitted=_not_permitted)
def commitment_propose(request: HttpRequest, commitment_id: uuid.UUID) -> HttpResponse:
    """The assignee proposes other terms (a deadline, wording, or both, with a
    note) instead of accepting or declining; the assigner answers."""
    if (signed_out := _signed_in_or_back(request, commitment_id)) is not None:
        return signed_out
    commitment = _visible(request, commitment_id)
    form = ProposeForm(request.POST, commitment=commitment)
    if not form.is_valid():
        return _render_detail(request, commitment, bound={"propose_form": form})
    try:
        services.commitment_propose(
            actor=Actor.for_user(request.user),
            commitment_id=commitment_id,
            terms_version=posted_terms_version(form.cleaned_data["terms_version"]),
            note=form.cleaned_data["note"],
            **form.proposed_terms(),
        )
    except NothingChanged:
        return _form_error(request, commitment_id, "propose_form", form, form.NOTHING_CHANGED)
    except ProposalAlreadyOpen:
        return _not_done(
            request, commitment_id, "Nothing was sent: a proposal is already waiting for an answer."
        )
    messages.success(
        request, f"Proposed: {commitment.assigner.name} is asked to accept or decline your terms."
    )
    return redirect("commitment_detail", commitment_id=commitment_id)


@require_POST
@maps_domain_errors(on_not_permitted=_not_permitted)
def commitment_request_extension(request: HttpRequest, commitment_id: uuid.UUID) -> HttpResponse:
    """The assignee asks for a later deadline on an Active commitment (also
    after the deadline passed, which the request says)."""
    if (signed_out := _signed_in_or_back(request, commitment_id)) is not None:
        return signed_out
    commitment = _visible(request, commitment_id)
    form = ExtensionForm(request.POST)
    if not form.is_valid():
        return _render_detail(request, commitment, bound={"extension_form": form})
    deadline = form.cleaned_data["deadline"]
    if _same_minute(deadline, commitment.deadline):
        deadline = commitment.deadline
    try:
        services.commitment_extension_request(
            actor=Actor.for_user(request.user),
            commitment_id=commitment_id,
            deadline=deadline,
            note=form.cleaned_data["note"],
        )
    except ProposalInvalid as exc:
        return _form_error(request, commitment_id, "extension_form", form, str(exc))
    except ProposalAlreadyOpen:
        return _not_done(
            request, commitment_id, "Nothing was sent: a request is already waiting for an answer."
        )
    messages.success(
        request, f"Asked for more time: {commitment.assigner.name} is asked to answer."
    )
    return redirect("commitment_detail", commitment_id=commitment_id)


# move -> (service, takes a note, message on success)
PROPOSAL_ANSWERS: dict[str, tuple[Callable[..., object], bool, str]] = {
    "accept_proposal": (
        services.commitment_proposal_accept,
        False,
        "Accepted the proposal: the commitment is now active on those terms.",
    ),
    "decline_proposal": (
        services.commitment_proposal_decline,
        True,
        "Declined the proposal: your terms wait for an answer again.",
    ),
    "grant_extension": (
        services.commitment_extension_grant,
        False,
        "More time granted: the deadline changed.",
    ),
    "decline_extension": (
        services.commitment_extension_decline,
        True,
        "Declined: the deadline stays.",
    ),
}


@require_POST
@maps_domain_errors(back=_done_url, on_not_permitted=_not_permitted)
def commitment_answer_proposal(
    request: HttpRequest, commitment_id: uuid.UUID, action: str
) -> HttpResponse:
    """The assigner answers the open proposal the page showed (its id): a
    counter-proposal accepted or declined, more time granted or declined."""
    if (signed_out := _signed_in_or_back(request, commitment_id)) is not None:
        return signed_out
    _visible(request, commitment_id)
    form = ProposalAnswerForm(request.POST)
    if not form.is_valid():
        return _not_done(
            request, commitment_id, "Nothing was done: the page did not say which proposal."
        )
    service, takes_note, success = PROPOSAL_ANSWERS[action]
    extra = {"note": form.cleaned_data["note"]} if takes_note else {}
    try:
        service(
            actor=Actor.for_user(request.user),
            commitment_id=commitment_id,
            proposal_id=form.cleaned_data["proposal_id"],
            **extra,
        )
    except ProposalNotOpen:
        return _not_done(
            request,
            commitment_id,
            "Nothing was done: this proposal was answered already (or the terms changed). "
            "The page shows where things stand now.",
        )
    messages.success(request, success)
    return redirect(_done_url(request, {"commitment_id": commitment_id}))


@require_POST
@maps_domain_errors(on_not_permitted=_not_permitted)
def commitment_comment(request: HttpRequest, commitment_id: uuid.UUID) -> HttpResponse:
    """A comment on the commitment's timeline, by either person; the other is told."""
    if (signed_out := _signed_in_or_back(request, commitment_id)) is not None:
        return signed_out
    commitment = _visible(request, commitment_id)
    form = CommentForm(request.POST)
    if not form.is_valid():
        return _render_detail(request, commitment, bound={"comment_form": form})
    try:
        services.commitment_comment(
            actor=Actor.for_user(request.user),
            commitment_id=commitment_id,
            body=form.cleaned_data["body"],
        )
    except CommentInvalid as exc:
        return _form_error(request, commitment_id, "comment_form", form, str(exc))
    messages.success(request, "Comment added.")
    return redirect(reverse("commitment_detail", args=[commitment_id]) + "#conversation-end")


@require_POST
@maps_domain_errors(on_not_permitted=_not_permitted)
def commitment_reassign(request: HttpRequest, commitment_id: uuid.UUID) -> HttpResponse:
    """The assigner hands the commitment to someone else, who is asked for a
    fresh handshake (an address with no account is invited)."""
    if (signed_out := _signed_in_or_back(request, commitment_id)) is not None:
        return signed_out
    commitment = _visible(request, commitment_id)
    form = ReassignForm(request.POST)
    if not form.is_valid():
        return _render_detail(request, commitment, bound={"reassign_form": form})
    previous = commitment.assignee_label
    try:
        services.commitment_reassign(
            actor=Actor.for_user(request.user),
            commitment_id=commitment_id,
            assignee_email=form.cleaned_data["assignee_email"],
            note=form.cleaned_data["note"],
        )
    except (AddressNotAskable, ReassignInvalid) as exc:
        form.add_error("assignee_email", str(exc))
        return _render_detail(request, commitment, bound={"reassign_form": form})
    now = _visible(request, commitment_id)
    if now.assignee_id is None:
        told = (
            f"{now.assignee_label} has no account yet: they are invited by e-mail, and the "
            "request waits for them."
        )
    else:
        told = f"{now.assignee_label} is asked for the handshake."
    messages.success(request, f"Reassigned: {previous} is told and released; {told}")
    return redirect("commitment_detail", commitment_id=commitment_id)
