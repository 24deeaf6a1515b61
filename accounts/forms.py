from __future__ import annotations

import zoneinfo

from django import forms

from accounts.models import User

TIMEZONE_CHOICES = [(tz, tz) for tz in sorted(zoneinfo.available_timezones())]
DISPLAY_NAME_HELP = (
    "Shown to the people you work with. Empty: the part of your e-mail before the @."
)


class SignupForm(forms.Form):
    """Extra fields on allauth's sign-up form."""

    display_name = forms.CharField(
        max_length=100, required=False, label="Display name", help_text=DISPLAY_NAME_HELP
    )
    timezone = forms.ChoiceField(
        choices=TIMEZONE_CHOICES,
        initial="UTC",
        label="Time zone",
        # static/js/app.js preselects the browser's zone when it is offered.
        widget=forms.Select(attrs={"data-detect-timezone": ""}),
    )

    def signup(self, request, user: User) -> None:
        user.display_name = self.cleaned_data.get("display_name", "").strip()
        user.timezone = self.cleaned_data.get("timezone") or "UTC"
        user.save(update_fields=["display_name", "timezone"])


class ProfileForm(forms.ModelForm):
    timezone = forms.ChoiceField(choices=TIMEZONE_CHOICES, label="Time zone")

    class Meta:
        model = User
        fields = ["display_name", "timezone"]
        labels = {"display_name": "Display name"}
        help_texts = {"display_name": DISPLAY_NAME_HELP}
