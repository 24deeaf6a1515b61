from __future__ import annotations

from django import forms

from accounts.models import User, known_timezones, validate_display_name
from lib.forms import TextField
from lib.text import strip_blank

TIMEZONES = sorted(known_timezones())
TIMEZONE_CHOICES = [(tz, tz) for tz in TIMEZONES]
DISPLAY_NAME_HELP = (
    "Shown to the people you work with. Empty: the part of your e-mail before the @."
)


class SignupForm(forms.Form):
    """Extra fields on allauth's sign-up form."""

    display_name = TextField(
        max_length=100,
        required=False,
        label="Display name",
        help_text=DISPLAY_NAME_HELP,
        validators=[validate_display_name],
    )
    timezone = forms.ChoiceField(
        choices=TIMEZONE_CHOICES,
        initial="UTC",
        label="Time zone",
        # static/js/app.js preselects the browser's zone when it is offered.
        widget=forms.Select(attrs={"data-detect-timezone": ""}),
    )

    def clean(self) -> dict:
        cleaned_data = super().clean() or {}
        # Password sign-up only: allauth's form for a provider's sign-up
        # (which has a `sociallogin`) shares this base.
        if not hasattr(self, "sociallogin"):
            from accounts.selectors import sso_required_message

            message = sso_required_message(str(cleaned_data.get("email") or ""))
            if message:
                self.add_error("email" if "email" in self.fields else None, message)
        return cleaned_data

    def signup(self, request, user: User) -> None:
        user.display_name = strip_blank(self.cleaned_data.get("display_name", ""))
        user.timezone = self.cleaned_data.get("timezone") or "UTC"
        user.save(update_fields=["display_name", "timezone"])


class DatalistInput(forms.TextInput):
    """A text input that suggests `options` as you type (<input list> over a
    <datalist>, no JavaScript): a searchable list that still takes any text, so
    the form validates the value itself."""

    template_name = "accounts/widgets/datalist_input.html"

    def __init__(self, options: list[str], attrs: dict | None = None) -> None:
        super().__init__(attrs)
        self.options = options

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        datalist_id = f"{context['widget']['attrs'].get('id') or name}-options"
        context["widget"]["attrs"]["list"] = datalist_id
        context["widget"]["datalist_id"] = datalist_id
        context["widget"]["options"] = self.options
        return context


class TimezoneField(forms.CharField):
    """A time zone typed or picked from the suggestions; only a known zone passes."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("label", "Time zone")
        kwargs.setdefault("max_length", 64)
        kwargs.setdefault(
            "help_text", "Type a city or region to search, e.g. Europe/Berlin or America/Chicago."
        )
        kwargs.setdefault(
            "widget",
            DatalistInput(TIMEZONES, attrs={"autocomplete": "off", "spellcheck": "false"}),
        )
        super().__init__(**kwargs)

    def clean(self, value):
        value = super().clean(value)
        if value not in known_timezones():
            # A zone typed in another case is taken in its proper spelling.
            match = next((tz for tz in TIMEZONES if tz.lower() == value.lower()), None)
            if match is None:
                raise forms.ValidationError(
                    f"“{value}” is not a time zone we know: pick one from the list."
                )
            value = match
        return value


class ProfileForm(forms.ModelForm):
    timezone = TimezoneField()

    class Meta:
        model = User
        fields = ["display_name", "timezone"]
        labels = {"display_name": "Display name"}
        help_texts = {"display_name": DISPLAY_NAME_HELP}
        field_classes = {"display_name": TextField}
