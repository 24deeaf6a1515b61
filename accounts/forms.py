from __future__ import annotations

from allauth.mfa.adapter import get_adapter as get_mfa_adapter
from allauth.mfa.base import forms as mfa_forms
from allauth.mfa.base.internal.flows import check_rate_limit
from allauth.mfa.models import Authenticator
from django import forms

from accounts import recovery_codes
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


def _clean_second_factor_code(form: mfa_forms.BaseAuthenticateForm) -> str:
    """allauth's check of a typed code (BaseAuthenticateForm.clean_code), with
    the recovery codes checked against the service's hashes
    (accounts.recovery_codes) rather than allauth's seed: the limit on wrong
    codes first, then the app's code and the recovery codes; a wrong code is
    announced against the main factor (the app), as allauth does."""
    clear_limit = check_rate_limit(form.user)
    code = form.cleaned_data["code"]
    main = None
    rows = Authenticator.objects.filter(user=form.user).exclude(
        type=Authenticator.Type.WEBAUTHN  # a key types no code
    )
    for row in rows:
        if main is None or row.type == Authenticator.Type.TOTP:
            main = row
        if row.type == Authenticator.Type.RECOVERY_CODES:
            valid = recovery_codes.use_code(row, code)
        else:
            valid = row.wrap().validate_code(code)
        if valid:
            row.user = form.user
            form.authenticator = row
            clear_limit()
            return str(code)
    if main is not None:
        form._emit_authentication_failed(main)
    raise get_mfa_adapter().validation_error("incorrect_code")


class AuthenticateForm(mfa_forms.AuthenticateForm):
    """The code asked for after the password (MFA_FORMS["authenticate"])."""

    def clean_code(self) -> str:
        return _clean_second_factor_code(self)


class ReauthenticateForm(mfa_forms.ReauthenticateForm):
    """The code that renews a sign-in (MFA_FORMS["reauthenticate"])."""

    def clean_code(self) -> str:
        return _clean_second_factor_code(self)


class MakeRecoveryCodesForm(forms.Form):
    """ "Make new codes": nothing to fill in; refused without an app or key."""

    def __init__(self, *args: object, user: User, **kwargs: object) -> None:
        self.user = user
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        if not recovery_codes.can_make_codes(self.user):
            raise forms.ValidationError(
                "Recovery codes come with an authenticator app or a security key: set one up first."
            )
        return cleaned
