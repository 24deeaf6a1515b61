"""Pages about commitments: the Accord (what others asked of you), the dashboard,
and one commitment's detail page with its handshake buttons."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from audit.models import ActorKind
from audit.services import Actor
from commitments import selectors, services
from commitments.errors import (
    CommitmentNotFound,
    InvalidTransition,
    NothingChanged,
    NotPermitted,
    TermsChanged,
)
from commitments.models import DESCRIPTION_MAX, Commitment, Status

# The Accord's sections, in the order a person acts on them.
ACCORD_SECTIONS = [
    ("waiting", "Waiting for your handshake", {Status.PENDING_HANDSHAKE}),
    ("active", "In progress", {Status.ACTIVE}),
    ("closed", "Closed", {Status.COMPLETED, Status.REFUSED}),
]


@login_required
def accord(request: HttpRequest) -> HttpResponse:
    commitments = list(selectors.commitment_list_for_assignee(user=request.user))
    sections = [
        {"key": key, "title": title, "rows": [c for c in commitments if c.status in statuses]}
        for key, title, statuses in ACCORD_SECTIONS
    ]
    return render(
        request,
        "commitments/accord.html",
        {"commitments": commitments, "sections": sections},
    )


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    assigned = list(selectors.commitment_list_for_assigner(user=request.user))
    return render(
        request,
        "commitments/dashboard.html",
        {
            "flow_score": selectors.flow_score(user=request.user),
            "assigned": assigned,
            # The Draft column: saved from Capture, not yet sent. Only drafts:
            # inbox-created commitments start past this step and never show here.
            "drafts": [c for c in assigned if c.status == Status.DRAFT],
            "asked": [c for c in assigned if c.status != Status.DRAFT],
        },
    )


# Audit actions as the timeline words them; anything else is shown as its name.
TIMELINE_WORDS = {
    "created": "Asked for a handshake",
    "draft_created": "Drafted",
    "draft_edited": "Edited the draft",
    "sent_for_handshake": "Sent for handshake",
    "accepted": "Accepted",
    "declined": "Declined",
    "completed": "Marked completed",
    "renegotiated": "Renegotiated",
}


def _timeline(commitment: Commitment) -> list[dict]:
    return [
        {
            "event": event,
            "words": TIMELINE_WORDS.get(event.action, event.action.replace("_", " ").capitalize()),
            "by_token": event.actor_kind == ActorKind.API_TOKEN,
            "by_system": event.actor_kind == ActorKind.SYSTEM,
        }
        for event in selectors.commitment_timeline(commitment=commitment)
    ]


class TermsForm(forms.Form):
    """What the assigner may change before a handshake completed. The deadline
    is read and shown in the viewer's time zone (UserTimezoneMiddleware)."""

    description = forms.CharField(
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


def posted_terms_version(value: object) -> int:
    """The terms version a form posted; a missing or malformed one is no
    version at all (0, which no commitment has), so the move is refused."""
    try:
        return int(str(value))
    except ValueError:
        return 0


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


def _render_detail(
    request: HttpRequest,
    commitment: Commitment,
    *,
    terms_form: TermsForm | None = None,
    terms_changed: dict | None = None,
) -> HttpResponse:
    terms_move = selectors.commitment_terms_move_for(user=request.user, commitment=commitment)
    if terms_form is None and terms_move is not None:
        terms_form = TermsForm(
            initial={
                "description": commitment.description,
                "deadline": commitment.deadline,
                "terms_version": commitment.terms_version,
            }
        )
    status = 200
    if terms_changed is not None:
        status = 409
    elif terms_form is not None and terms_form.errors:
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
            "timeline": _timeline(commitment),
            "terms_changed": terms_changed,
        },
        status=status,
    )


@require_safe
@login_required
def commitment_detail(request: HttpRequest, commitment_id: uuid.UUID) -> HttpResponse:
    commitment = selectors.commitment_get_visible(user=request.user, commitment_id=commitment_id)
    if commitment is None:
        raise Http404("No such commitment.")
    return _render_detail(request, commitment)


@require_POST
def commitment_change_terms(request: HttpRequest, commitment_id: uuid.UUID) -> HttpResponse:
    """The assigner edits a Draft, or renegotiates before a handshake completed
    (the assignee is then asked again), through the same services as ever."""
    detail_url = reverse("commitment_detail", args=[commitment_id])
    if not request.user.is_authenticated:
        return redirect_to_login(detail_url)
    commitment = selectors.commitment_get_visible(user=request.user, commitment_id=commitment_id)
    if commitment is None:
        raise Http404("No such commitment.")
    form = TermsForm(request.POST)
    if not form.is_valid():
        return _render_detail(request, commitment, terms_form=form)
    actor = Actor.for_user(request.user)
    deadline = form.cleaned_data["deadline"]
    # The field shows whole minutes: the minute shown back, unchanged, keeps a
    # stored deadline that has seconds (an inbox may send them).
    if commitment.deadline and deadline == commitment.deadline.replace(second=0, microsecond=0):
        deadline = commitment.deadline
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
    except CommitmentNotFound:
        raise Http404("No such commitment.") from None
    except NotPermitted as exc:
        raise PermissionDenied(str(exc)) from None
    except NothingChanged:
        messages.info(request, "Nothing changed: edit the description or the deadline first.")
    except InvalidTransition as exc:
        status = Status(exc.current_status).label
        messages.error(request, f"Could not {exc.action} this commitment: its status is {status}.")
    except TermsChanged as exc:
        # Two tabs, or two people: the form showed terms that are no longer
        # the current ones. Nothing is saved; the form comes back with the
        # current terms, and what was sent is shown so it can be redone.
        current = selectors.commitment_get_visible(user=request.user, commitment_id=commitment_id)
        if current is None:
            raise Http404("No such commitment.") from None
        changed = _terms_changed(
            current,
            exc,
            message=(
                "Your change was not saved: the terms were changed elsewhere after this form "
                "was opened. The form now shows the current terms; make your change again "
                "on them if it still applies."
            ),
            sent={"description": terms["description"], "deadline": terms["deadline"]},
        )
        return _render_detail(request, current, terms_changed=changed)
    return redirect(detail_url)


# action name -> (service, message on success)
HANDSHAKE_ACTIONS: dict[str, tuple[Callable[..., object], str]] = {
    "send": (services.commitment_send_for_handshake, "Sent for handshake."),
    "accept": (services.commitment_accept, "Accepted: the commitment is now active."),
    "decline": (services.commitment_decline, "Declined."),
    "complete": (services.commitment_complete, "Marked completed."),
}
# The moves that answer the terms shown: their forms post the terms version.
ANSWERS_TO_TERMS = {"accept": "accepted", "decline": "declined"}


@require_POST
def commitment_act(request: HttpRequest, commitment_id: uuid.UUID, action: str) -> HttpResponse:
    """One handshake move through its service, then back to the detail page."""
    detail_url = reverse("commitment_detail", args=[commitment_id])
    if not request.user.is_authenticated:
        # Back to the page after signing in, not to this POST-only address.
        return redirect_to_login(detail_url)
    # Someone who cannot see the commitment learns nothing about it, not even
    # whether the move would have been refused for its status.
    if selectors.commitment_get_visible(user=request.user, commitment_id=commitment_id) is None:
        raise Http404("No such commitment.")
    service, success = HANDSHAKE_ACTIONS[action]
    extra = {}
    if action in ANSWERS_TO_TERMS:
        extra["terms_version"] = posted_terms_version(request.POST.get("terms_version"))
    if action == "decline":
        extra["reason"] = request.POST.get("reason", "")
    # Posted from the Accord: back there (with its filters and pages); only
    # that page, so the field cannot send anyone elsewhere.
    back = request.POST.get("next", "")
    done_url = back if back == "/" or back.startswith("/?") else detail_url
    try:
        service(actor=Actor.for_user(request.user), commitment_id=commitment_id, **extra)
    except TermsChanged as exc:
        current = selectors.commitment_get_visible(user=request.user, commitment_id=commitment_id)
        if current is None:
            raise Http404("No such commitment.") from None
        changed = _terms_changed(
            current,
            exc,
            message=(
                f"Nothing was {ANSWERS_TO_TERMS[action]}: {current.assigner.name} changed the "
                "terms after this page was opened. Read the new terms below and answer again."
            ),
        )
        return _render_detail(request, current, terms_changed=changed)
    except CommitmentNotFound:
        raise Http404("No such commitment.") from None
    except NotPermitted as exc:
        raise PermissionDenied(str(exc)) from None
    except InvalidTransition as exc:
        status = Status(exc.current_status).label
        messages.error(request, f"Could not {exc.action} this commitment: its status is {status}.")
        return redirect(done_url)
    messages.success(request, success)
    return redirect(done_url)
