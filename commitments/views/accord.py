"""The Accord (what others asked of you, live) and the New commitment page
(asking someone from the web). Thin views: parse, call a selector or a
service, render. The handshake buttons of the Accord post to the transition
URLs of `commitments.views`, which send the person back here."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Page, Paginator
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_safe

from accounts.requests import AuthenticatedRequest
from audit.services import Actor
from commitments import selectors, services
from commitments.errors import AddressNotAskable
from commitments.models import DESCRIPTION_MAX, Status
from commitments.views.errors import maps_domain_errors
from lib.forms import TextField

PAGE_SIZE = 25
# Seconds between two looks of the Accord's script at the fragment.
POLL_SECONDS = 5


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    status: str
    empty: str


# In the order a person acts on them. Each is one status, shown once, in the
# section's heading.
SECTIONS = (
    Section("waiting", "Waiting for your handshake", Status.PENDING_HANDSHAKE, "Nothing waits."),
    Section("active", "In progress", Status.ACTIVE, "Nothing in progress."),
    Section("completed", Status.COMPLETED.label, Status.COMPLETED, "Nothing completed yet."),
    # The status's word on every page (the glossary of docs/pages.md).
    Section("declined", Status.REFUSED.label, Status.REFUSED, "Nothing declined."),
    Section("withdrawn", Status.WITHDRAWN.label, Status.WITHDRAWN, "Nothing withdrawn."),
)
# The sections whose rows may carry an open proposal (the person's own, waiting
# for the asker's answer).
OPEN_SECTIONS = {"waiting", "active"}


class AccordFilter(forms.Form):
    person = forms.UUIDField(required=False)
    q = TextField(required=False, max_length=200, strip=True)


def _page_number(value: str | None) -> int:
    try:
        return max(1, int(value or 1))
    except ValueError:
        return 1


class CountedPaginator(Paginator):
    """A paginator told how many rows there are (`selectors.accord_counts`
    counts every part of the Accord in one query): it only fetches its page,
    and nothing for an empty part."""

    def __init__(self, object_list: Any, per_page: int, *, count: int) -> None:
        super().__init__(object_list, per_page)
        self.__dict__["count"] = count  # the cached_property, known already


def _accord_context(request: AuthenticatedRequest, *, last_seen: dt.datetime | None) -> dict:
    """The sections of the Accord, each a page of PAGE_SIZE rows: one query
    counts them all, then one a section with rows (its page), whatever the
    number of commitments."""
    filters = AccordFilter(request.GET)
    person, text = None, ""
    if filters.is_valid():
        person, text = filters.cleaned_data["person"], filters.cleaned_data["q"]
    counts = selectors.accord_counts(user=request.user, person=person, text=text)
    sections: list[dict[str, Any]] = []
    # Proposals and requests for more time on what the person asked, waiting
    # for their answer: first, answered in the list.
    answers = _answers_context(request, person=person, text=text, count=counts["answers"])
    total = answers["page"].paginator.count
    for section in SECTIONS:
        rows = selectors.accord_section(
            user=request.user, statuses=[section.status], person=person, text=text
        )
        if section.key in OPEN_SECTIONS:
            rows = selectors.with_open_proposal(rows)
        param = f"{section.key}_page"
        page: Page = CountedPaginator(rows, PAGE_SIZE, count=counts[section.status]).get_page(
            _page_number(request.GET.get(param))
        )
        total += page.paginator.count
        for c in page.object_list:
            c.is_new = last_seen is not None and c.created_at > last_seen
            # Changed by someone else: your own accept or decline is no news.
            c.is_changed = (
                last_seen is not None
                and not c.is_new
                and c.updated_at > last_seen
                and c.last_actor_id != request.user.pk
            )
        sections.append(
            {
                "section": section,
                "page": page,
                "previous_url": _with_page(request.GET, param, page.number - 1)
                if page.has_previous()
                else None,
                "next_url": _with_page(request.GET, param, page.number + 1)
                if page.has_next()
                else None,
            }
        )
    # The navigation's count (`selectors.accord_waiting_count`), for the
    # script to follow: handshakes and answers waiting.
    waiting = counts[Status.PENDING_HANDSHAKE] + counts["answers"]
    return {
        "answers": answers,
        "sections": sections,
        "total": total,
        "filtered": bool(person or text),
        "waiting": waiting if not (person or text) else None,
        "filter_person": str(person or ""),
        "filter_q": text,
        "query": request.GET.urlencode(),
        "poll_seconds": POLL_SECONDS,
        "accord_path": reverse("accord"),
    }


def _answers_context(
    request: AuthenticatedRequest, *, person: Any, text: str, count: int
) -> dict[str, Any]:
    """The page of proposals waiting for the person's answer (`count` of
    them), filtered as the rest of the Accord (by who proposed, by words of
    the description)."""
    rows = selectors.answers_waiting_for(user=request.user)
    if person:
        rows = rows.filter(commitment__assignee_id=person)
    if text:
        rows = rows.filter(commitment__description__icontains=text)
    param = "answers_page"
    page: Page = CountedPaginator(rows, PAGE_SIZE, count=count).get_page(
        _page_number(request.GET.get(param))
    )
    return {
        "page": page,
        "previous_url": _with_page(request.GET, param, page.number - 1)
        if page.has_previous()
        else None,
        "next_url": _with_page(request.GET, param, page.number + 1) if page.has_next() else None,
    }


def _with_page(query: QueryDict, param: str, number: int) -> str:
    params = query.copy()
    params[param] = str(number)
    return "?" + urlencode(sorted(params.lists()), doseq=True)


@require_safe
@login_required
def accord(request: AuthenticatedRequest) -> HttpResponse:
    """The Accord. Looking at it is remembered: what was created or changed
    since the previous look is marked."""
    last_seen = services.accord_visit_record(user=request.user, now=timezone.now())
    context = _accord_context(request, last_seen=last_seen)
    filtered = AccordFilter(request.GET)
    person = filtered.cleaned_data["person"] if filtered.is_valid() else None
    context["people"] = selectors.accord_people(user=request.user, including=person)
    return render(request, "commitments/accord.html", context)


@require_safe
@login_required
def accord_fragment(request: AuthenticatedRequest) -> HttpResponse:
    """The Accord's sections alone, for its script to swap in: news appears
    without a reload. Does not count as a look (the markers stay)."""
    context = _accord_context(request, last_seen=selectors.accord_last_seen(user=request.user))
    return render(request, "commitments/_accord_sections.html", context)


# --- asking ---------------------------------------------------------------------

DEADLINE_CHOICES = [
    ("none", "No deadline"),
    ("today", "Today (end of day)"),
    ("week", "End of week (Sunday)"),
    ("custom", "On this date and time:"),
]


def quick_deadline(choice: str, *, now: dt.datetime) -> dt.datetime | None:
    """A quick pick as a moment, in the current (the viewer's) time zone:
    today and end of week are 23:59 of today and of this week's Sunday."""
    local = timezone.localtime(now)
    end_of_day = local.replace(hour=23, minute=59, second=0, microsecond=0)
    if choice == "today":
        return end_of_day
    if choice == "week":
        return end_of_day + dt.timedelta(days=6 - local.weekday())
    return None


class AskForm(forms.Form):
    """Who is asked, what, by when. The deadline is read in the viewer's time
    zone (UserTimezoneMiddleware)."""

    assignee_email = forms.EmailField(
        label="Who (e-mail address)",
        max_length=254,
        widget=forms.EmailInput(
            attrs={"list": "collaborators", "autocomplete": "off", "autofocus": True}
        ),
        help_text="Someone without an account gets an invitation by e-mail.",
    )
    description = TextField(
        label="What",
        max_length=DESCRIPTION_MAX,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3}),
    )
    deadline_choice = forms.ChoiceField(
        label="By when",
        choices=DEADLINE_CHOICES,
        initial="none",
        widget=forms.RadioSelect,
    )
    deadline = forms.DateTimeField(
        label="Date and time",
        required=False,
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
    # Checked by the person after the page warned them of a past deadline.
    confirm_past = forms.BooleanField(
        label="Yes, ask with this deadline in the past", label_suffix="", required=False
    )

    def clean(self):
        data = super().clean()
        choice = data.get("deadline_choice")
        if choice == "none" and data.get("deadline") is not None:
            choice = "custom"  # a date typed in, the radio left alone
        if choice == "custom":
            if data.get("deadline") is None and "deadline" not in self.errors:
                self.add_error("deadline", "Enter the date and time, or pick another choice.")
            data["when"] = data.get("deadline")
        else:
            data["when"] = quick_deadline(choice or "none", now=timezone.now())
        when = data.get("when")
        self.past_deadline = when is not None and when < timezone.now()
        if self.past_deadline and not data.get("confirm_past") and not self.errors:
            raise forms.ValidationError(
                "This deadline is already past: check the box below to ask anyway, or change it.",
                code="past_deadline",
            )
        return data


def _render_ask(request: AuthenticatedRequest, form: AskForm, *, status: int = 200) -> HttpResponse:
    return render(
        request,
        "commitments/new.html",
        {
            "form": form,
            "collaborators": selectors.collaborators_for(user=request.user),
            "past_deadline": getattr(form, "past_deadline", False),
            "timezone_name": timezone.get_current_timezone_name(),
        },
        status=status,
    )


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
@maps_domain_errors
def commitment_new(request: AuthenticatedRequest) -> HttpResponse:
    """Ask someone: save a Draft, or send it for the handshake at once."""
    if request.method != "POST":
        return _render_ask(request, AskForm(initial={"deadline_choice": "none"}))
    form = AskForm(request.POST)
    if not form.is_valid():
        return _render_ask(request, form, status=400)
    send = request.POST.get("submit") != "draft"
    try:
        commitment = services.commitment_ask(
            actor=Actor.for_user(request.user),
            assignee_email=form.cleaned_data["assignee_email"],
            description=form.cleaned_data["description"],
            deadline=form.cleaned_data["when"],
            send=send,
        )
    except AddressNotAskable as exc:
        form.add_error("assignee_email", str(exc))
        return _render_ask(request, form, status=400)
    who = commitment.assignee_label
    if commitment.assignee_id is None:
        note = f"{who} has no account yet: " + (
            "they are invited by e-mail (an address without an account gets one e-mail a "
            "day at most, later requests together), and the request waits for them."
            if send
            else "they are invited when you send the draft."
        )
    else:
        note = f"{who} is asked for the handshake." if send else "Nobody is asked yet."
    messages.success(request, ("Sent. " if send else "Draft saved. ") + note)
    return redirect("commitment_detail", commitment_id=commitment.pk)
