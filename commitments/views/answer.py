"""Answering from the nudge: the page an answer link opens
(`/commitments/<id>/answer/<token>/`, name `commitment_answer`).

A handshake request's nudge carries three signed links, Accept, Decline and
Propose another date (commitments.answer_links). Opening one never acts: mail
scanners and link previews follow links, so a GET only shows the terms and the
form, preselected for the link's answer, and writes nothing (no audit row, no
outbox row, no status). The form's POST (with its CSRF token) acts, through the
same services as the commitment page, as the signed-in person, who must be the
one the link was made for, on the version of the terms the link was made for.

Answers, in the order checked (docs/pages.md, "Answering from the nudge"):
400 a link this service did not sign for this commitment; 410 a link older
than ANSWER_LINK_MAX_AGE; a redirect to sign in (and back) when signed out;
403 a link made for another person; 404 a commitment no longer theirs to see;
409 a request answered already (or withdrawn), or terms changed since the link
was made; else the form (200), or a form with errors (400).
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from audit.services import Actor
from commitments import selectors, services
from commitments.answer_links import (
    AnswerLink,
    AnswerLinkExpired,
    AnswerLinkInvalid,
    answer_token_read,
)
from commitments.errors import NothingChanged, ProposalAlreadyOpen, TermsChanged
from commitments.forms import DeclineForm, ProposeForm
from commitments.models import DESCRIPTION_MAX, NOTE_MAX, Commitment, Status
from commitments.views.errors import maps_domain_errors

# The answers, as the page words them (its headings and buttons).
ANSWER_WORDS = {
    "accept": {
        "name": "Accept",
        "heading": "Accept this request?",
        "button": "Accept",
        "style": "primary",
    },
    "decline": {
        "name": "Decline",
        "heading": "Decline this request?",
        "button": "Decline",
        "style": "danger",
    },
    "propose": {
        "name": "Propose another date",
        "heading": "Propose another date?",
        "button": "Propose this date",
        "style": "primary",
    },
}


def _page(
    request: HttpRequest, template: str, context: dict[str, Any], *, status: int
) -> HttpResponse:
    return render(request, f"commitments/{template}", context, status=status)


def _problem(
    request: HttpRequest, *, status: int, title: str, lines: list[str], **context: Any
) -> HttpResponse:
    """A page that says why the link does nothing, and where to go instead."""
    return _page(
        request,
        "answer_problem.html",
        {"title": title, "lines": lines, **context},
        status=status,
    )


def _read_link(
    request: HttpRequest, commitment_id: uuid.UUID, token: str
) -> AnswerLink | HttpResponse:
    try:
        return answer_token_read(token, commitment_id=commitment_id)
    except AnswerLinkExpired:
        days = round(_max_age_days())
        return _problem(
            request,
            status=410,
            title="This link has expired",
            lines=[
                f"The links in a request stay good for {days} days, and this one is older. "
                "Nothing was changed.",
                "Open the commitment to answer it there.",
            ],
            commitment_url=reverse("commitment_detail", args=[commitment_id]),
        )
    except AnswerLinkInvalid:
        return _problem(
            request,
            status=400,
            title="This link is not valid",
            lines=[
                "It is not a link Commitments made for this request: part of it may be missing "
                "(a mail program can cut a long link) or changed. Nothing was changed.",
                "Your Accord lists every request waiting for your answer.",
            ],
        )


def _max_age_days() -> float:
    return settings.ANSWER_LINK_MAX_AGE / 86400


def _what_happened(commitment: Commitment) -> list[str]:
    """Why a request no longer waits for an answer, in words."""
    assigner = commitment.assigner.name
    when = {
        Status.ACTIVE: commitment.activated_at,
        Status.COMPLETED: commitment.completed_at,
        Status.REFUSED: commitment.refused_at,
        Status.WITHDRAWN: commitment.withdrawn_at,
    }.get(Status(commitment.status))
    # In the viewer's time zone, as every page shows times.
    on = f" on {timezone.localtime(when):%-d %b %Y at %H:%M}" if when else ""
    words = {
        Status.ACTIVE: f"It was accepted already{on}: it is Active.",
        Status.COMPLETED: f"It was accepted and has been completed{on}.",
        Status.REFUSED: f"It was declined already{on}.",
        Status.WITHDRAWN: f"{assigner} withdrew it{on}: they no longer need it.",
    }
    return [
        words.get(Status(commitment.status), f"Its status is {commitment.get_status_display()}."),
        "This link does nothing now. Nothing was changed.",
    ]


def _bound(
    request: HttpRequest, commitment_id: uuid.UUID, token: str
) -> tuple[AnswerLink, Commitment] | HttpResponse:
    """The link and its commitment, when the signed-in person may answer it
    now; else the page (or redirect) that says why not."""
    link = _read_link(request, commitment_id, token)
    if isinstance(link, HttpResponse):
        return link
    if not request.user.is_authenticated:
        # Sign in, then back to this page (a GET, which only shows it).
        return redirect_to_login(reverse("commitment_answer", args=[commitment_id, token]))
    if request.user.pk != link.user_id:
        return _problem(
            request,
            status=403,
            title="This link was sent to someone else",
            lines=[
                f"You are signed in as {request.user.email}, and this link was made for "
                "another person: it answers only as them. Nothing was changed.",
                "If it was sent to you under another address, sign out and sign in with that "
                "one: you come back here.",
            ],
            sign_out_next=reverse("commitment_answer", args=[commitment_id, token]),
        )
    commitment = selectors.commitment_get_visible(user=request.user, commitment_id=commitment_id)
    if commitment is None or commitment.assignee_id != request.user.pk:
        return _problem(
            request,
            status=404,
            title="This request is not waiting for you",
            lines=[
                "It is no longer asked of you (it may have been handed to someone else), "
                "or it does not exist. Nothing was changed.",
                "Your Accord lists every request waiting for your answer.",
            ],
        )
    if commitment.status != Status.PENDING_HANDSHAKE:
        return _problem(
            request,
            status=409,
            title="This request was answered already"
            if commitment.status != Status.WITHDRAWN
            else "This request was withdrawn",
            lines=_what_happened(commitment),
            commitment=commitment,
            commitment_url=reverse("commitment_detail", args=[commitment_id]),
        )
    if link.terms_version != commitment.terms_version:
        return _terms_changed_page(request, commitment, shown_version=link.terms_version)
    return link, commitment


def _terms_changed_page(
    request: HttpRequest, commitment: Commitment, *, shown_version: int
) -> HttpResponse:
    """The link answers terms that were changed since it was made: nothing is
    done; the current terms, what changed, and the commitment page."""
    return _problem(
        request,
        status=409,
        title="The terms changed",
        lines=[
            f"{commitment.assigner.name} changed the terms after this link was sent to you, and "
            "the link answers the terms it was sent with. Nothing was changed.",
            "Read the current terms below and answer them on the commitment's page.",
        ],
        commitment=commitment,
        c=commitment,  # for the shared _deadline.html
        show_terms=True,
        changes=selectors.commitment_terms_changes_since(
            commitment=commitment, terms_version=shown_version
        ),
        commitment_url=reverse("commitment_detail", args=[commitment.pk]),
    )


def _on_terms_changed(request: HttpRequest, exc: TermsChanged, view_kwargs: dict) -> HttpResponse:
    """The terms changed between the page and its POST."""
    commitment = selectors.commitment_get_visible(
        user=request.user,  # type: ignore[arg-type]  # signed in: checked before any service
        commitment_id=view_kwargs["commitment_id"],
    )
    if commitment is None:
        return redirect("accord")
    return _terms_changed_page(request, commitment, shown_version=exc.shown_version)


def _form_page(
    request: HttpRequest,
    link: AnswerLink,
    commitment: Commitment,
    *,
    chosen: str | None = None,
    decline_form: DeclineForm | None = None,
    propose_form: ProposeForm | None = None,
    status: int = 200,
) -> HttpResponse:
    chosen = chosen or link.answer
    answers = [chosen, *(answer for answer in ANSWER_WORDS if answer != chosen)]
    offered = [{"answer": answer, **ANSWER_WORDS[answer]} for answer in answers]
    return _page(
        request,
        "answer.html",
        {
            "commitment": commitment,
            "c": commitment,  # for the shared _deadline.html
            "first": offered[0],
            "others": offered[1:],
            "others_words": " or ".join(str(a["name"]) for a in offered[1:]),
            "decline_form": decline_form or DeclineForm(),
            "propose_form": propose_form,
            # What the proposal's fields show: what was typed, else the terms asked.
            "propose_deadline": propose_form.data.get("deadline", "")
            if propose_form is not None
            else _local_minute(commitment.deadline),
            "propose_description": propose_form.data.get("description", "")
            if propose_form is not None
            else commitment.description,
            "note_max": NOTE_MAX,
            "timezone_name": timezone.get_current_timezone_name(),
            "reason_max": services.DECLINE_REASON_MAX,
            "description_max": DESCRIPTION_MAX,
            "detail_url": reverse("commitment_detail", args=[commitment.pk]),
        },
        status=status,
    )


def _local_minute(moment: dt.datetime | None) -> str:
    """A deadline as a datetime-local field shows it, in the viewer's zone."""
    return timezone.localtime(moment).strftime("%Y-%m-%dT%H:%M") if moment else ""


def _propose(
    request: HttpRequest, link: AnswerLink, commitment: Commitment, actor: Actor
) -> HttpResponse:
    # The commitment page's form, with plain field names (the rules: commitments.forms).
    form = ProposeForm(request.POST, commitment=commitment, prefix="")
    if form.is_valid():
        try:
            services.commitment_propose(
                actor=actor,
                commitment_id=commitment.pk,
                terms_version=link.terms_version,
                note=form.cleaned_data["note"],
                **form.proposed_terms(),
            )
        except NothingChanged:
            form.add_error(None, form.NOTHING_CHANGED)
        except ProposalAlreadyOpen:
            form.add_error(
                None,
                f"You proposed other terms already: they wait for {commitment.assigner.name}'s "
                "answer.",
            )
        else:
            messages.success(
                request,
                f"Proposed: {commitment.assigner.name} is asked to accept your terms or keep "
                "theirs.",
            )
            return redirect("commitment_detail", commitment.pk)
    return _form_page(request, link, commitment, chosen="propose", propose_form=form, status=400)


@require_http_methods(["GET", "HEAD", "POST"])
@maps_domain_errors(on_terms_changed=_on_terms_changed)
def commitment_answer(request: HttpRequest, commitment_id: uuid.UUID, token: str) -> HttpResponse:
    bound = _bound(request, commitment_id, token)
    if isinstance(bound, HttpResponse):
        return bound
    link, commitment = bound
    if request.method != "POST":
        return _form_page(request, link, commitment)
    answer = request.POST.get("answer", "")
    actor = Actor.for_user(request.user)  # signed in (_bound)
    detail_url = reverse("commitment_detail", args=[commitment_id])
    if answer == "accept":
        services.commitment_accept(
            actor=actor, commitment_id=commitment_id, terms_version=link.terms_version
        )
        messages.success(request, "Accepted: the commitment is now active.")
        return redirect(detail_url)
    if answer == "decline":
        form = DeclineForm(request.POST)
        if not form.is_valid():
            return _form_page(
                request, link, commitment, chosen="decline", decline_form=form, status=400
            )
        services.commitment_decline(
            actor=actor,
            commitment_id=commitment_id,
            terms_version=link.terms_version,
            reason=form.cleaned_data["reason"],
        )
        messages.success(request, "Declined.")
        return redirect(detail_url)
    if answer == "propose":
        return _propose(request, link, commitment, actor)
    # Not an answer this page offers: the form again, nothing done.
    return _form_page(request, link, commitment, status=400)
