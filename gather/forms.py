"""The capture page's save step: the drafts the user chose, as edited, in a
formset (the page's script adds one form per gathered draft; without the
script the page re-renders posted drafts with their errors)."""

from __future__ import annotations

from django import forms

from accounts.selectors import users_with_verified_primary_email
from commitments.models import DESCRIPTION_MAX
from gather.serializers import TEXT_MAX
from lib.forms import TextField

ASSIGNEE_UNKNOWN = "No user can receive commitments at this e-mail address."
CONFIDENCES = [("high", "High"), ("medium", "Medium"), ("low", "Low")]


class CaptureForm(forms.Form):
    raw_text = TextField(
        label="Text",
        max_length=TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 12, "id": "capture-text"}),
        help_text="Meeting notes, a chat log or an e-mail thread. Kept with each saved draft.",
    )


class DraftForm(forms.Form):
    save = forms.BooleanField(label="Save this draft", required=False, initial=True)
    description = TextField(max_length=DESCRIPTION_MAX, widget=forms.Textarea(attrs={"rows": 2}))
    assignee_email = forms.EmailField(
        label="Assignee",
        help_text="One of your collaborators, or anyone's e-mail address.",
        widget=forms.EmailInput(attrs={"list": "collaborators", "autocomplete": "off"}),
    )
    deadline = forms.DateTimeField(
        required=False,
        help_text="In your time zone; empty for no deadline.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
    confidence = forms.ChoiceField(choices=CONFIDENCES, widget=forms.HiddenInput)
    source_quote = TextField(required=False, widget=forms.HiddenInput)
    deadline_text = TextField(required=False, widget=forms.HiddenInput)

    def clean(self):
        data = super().clean()
        if not data.get("save"):
            # A draft left out is not judged: nothing of it is saved.
            self._errors.clear()
            return data
        email = data.get("assignee_email")
        if email:
            assignee = (
                users_with_verified_primary_email().filter(email__iexact=email.strip()).first()
            )
            if assignee is None:
                self.add_error("assignee_email", ASSIGNEE_UNKNOWN)
            data["assignee"] = assignee
        return data


class BaseDraftFormSet(forms.BaseFormSet):
    def clean(self) -> None:
        if any(self.errors):
            return
        if not self.chosen():
            raise forms.ValidationError("Choose at least one draft to save.")

    def chosen(self) -> list[dict]:
        return [form.cleaned_data for form in self.forms if form.cleaned_data.get("save")]


# A subclass of BaseDraftFormSet (the stubs say BaseFormSet).
DraftFormSet: type[BaseDraftFormSet] = forms.formset_factory(  # type: ignore[assignment]
    DraftForm, formset=BaseDraftFormSet, extra=0, max_num=200, validate_max=True
)
