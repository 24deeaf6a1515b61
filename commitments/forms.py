"""The forms of the conversation around a commitment (propose other terms,
answer a proposal, ask for more time, comment, reassign) and of
the answer page's decline. They shape the input; the moves' rules are the
services' (commitments.services), whose refusals the views put back on the
page. Deadlines are read in the viewer's time zone (UserTimezoneMiddleware),
as the pages show them.

A counter-proposal has one form, `ProposeForm`, on both pages that take one:
the commitment page (`commitments.views.commitment`, fields prefixed
`propose-`) and the answer page a nudge's link opens
(`commitments.views.answer`, `prefix=""`: its fields are plain names)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import forms
from django.utils import timezone

from commitments import services
from commitments.models import COMMENT_MAX, DESCRIPTION_MAX, NOTE_MAX, Commitment
from lib.forms import TextField

DATETIME_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]


def _deadline_field(**kwargs: Any) -> forms.DateTimeField:
    return forms.DateTimeField(
        input_formats=DATETIME_FORMATS,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        **kwargs,
    )


def _note_field(label: str = "Note (optional)", **kwargs: Any) -> TextField:
    return TextField(
        label=label,
        required=False,
        max_length=NOTE_MAX,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 2, "maxlength": NOTE_MAX}),
        **kwargs,
    )


class ProposeForm(forms.Form):
    """The assignee's other terms on a request waiting for their handshake: a
    deadline (the usual case), other wording, or both, with a note.

    The rules, the same on both pages:
    - an empty field keeps that term as asked; both empty is an error
      (`EMPTY`), nothing typed to propose;
    - the deadline asked, sent back as the field shows it (whole minutes; the
      deadline asked may have seconds: an inbox may send them), is that
      deadline, kept: never "in the past", even once it passed;
    - any other deadline must still be ahead (`PAST`);
    - terms that equal those asked are the service's `NothingChanged`, which
      the views say as `NOTHING_CHANGED`."""

    EMPTY = "Propose a deadline, other wording or both: an empty proposal changes nothing."
    PAST = "Propose a date that is still ahead."
    NOTHING_CHANGED = (
        "These are the terms asked: change the deadline or the wording to propose other terms."
    )

    prefix = "propose"
    deadline = _deadline_field(
        label="Deadline you propose",
        required=False,
        help_text="Leave empty to keep the deadline asked.",
    )
    description = TextField(
        label="Wording you propose (optional)",
        required=False,
        max_length=DESCRIPTION_MAX,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Leave empty to keep the wording asked.",
    )
    note = _note_field()
    # The commitment page's: the version of the terms it showed. The answer
    # page's link carries its own.
    terms_version = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, commitment: Commitment, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commitment = commitment

    def clean_deadline(self) -> dt.datetime | None:
        deadline: dt.datetime | None = self.cleaned_data["deadline"]
        if deadline is None:
            return None
        current = self.commitment.deadline
        if current is not None and deadline == current.replace(second=0, microsecond=0):
            return current
        if deadline <= timezone.now():
            raise forms.ValidationError(self.PAST, code="past")
        return deadline

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not self.errors and data.get("deadline") is None and not data.get("description"):
            raise forms.ValidationError(self.EMPTY, code="nothing")
        return data

    def proposed_terms(self) -> dict[str, Any]:
        """The terms to pass to `services.commitment_propose` (valid form
        only): those given; the service leaves out any equal to those asked."""
        terms: dict[str, Any] = {}
        if self.cleaned_data["deadline"] is not None:
            terms["deadline"] = self.cleaned_data["deadline"]
        if self.cleaned_data["description"]:
            terms["description"] = self.cleaned_data["description"]
        return terms


class ExtensionForm(forms.Form):
    """The assignee asks for a later deadline on an Active commitment."""

    prefix = "extension"
    deadline = _deadline_field(label="New deadline")
    note = _note_field()


class ProposalAnswerForm(forms.Form):
    """An answer to the open proposal the page showed: its id, and with a
    decline an optional note."""

    proposal_id = forms.UUIDField(widget=forms.HiddenInput)
    note = _note_field()


class CommentForm(forms.Form):
    prefix = "comment"
    body = TextField(
        label="Comment",
        max_length=COMMENT_MAX,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3, "maxlength": COMMENT_MAX}),
        help_text=f"Plain text, up to {COMMENT_MAX:,} characters. The other person is told.",
    )


class ReassignForm(forms.Form):
    prefix = "reassign"
    assignee_email = forms.EmailField(
        label="Hand it to (e-mail address)",
        max_length=254,
        widget=forms.EmailInput(attrs={"autocomplete": "off"}),
        help_text="Someone without an account gets an invitation by e-mail.",
    )
    note = _note_field()


class DeclineForm(forms.Form):
    """The answer page's decline: an optional reason."""

    reason = TextField(required=False, max_length=services.DECLINE_REASON_MAX)
