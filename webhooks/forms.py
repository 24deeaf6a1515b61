"""The forms of the Webhooks page. They only shape the input: what a URL may
be, and whether an external system already has an endpoint, is decided by
the services (webhooks.services), whose refusals the views put back on the
form as errors of the field they name."""

from __future__ import annotations

from django import forms

from commitments.models import EXTERNAL_SYSTEM_MAX
from lib.forms import TextField
from webhooks.errors import WebhookError
from webhooks.models import URL_MAX
from webhooks.payloads import OPTIONAL_EVENTS

URL_HELP = (
    "Where events are POSTed. In production it must start with https:// and "
    "must not point to a private or local address; it is checked now and at every send."
)


def _url_field() -> forms.CharField:
    return forms.CharField(
        label="URL",
        max_length=URL_MAX,
        strip=True,
        widget=forms.URLInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
        help_text=URL_HELP,
    )


EVENTS_HELP = (
    "The four status events (commitment.activated, .refused, .renegotiated, .completed) are "
    "always sent. Choose the others your receiver wants; they are sent from the next event on."
)


def _events_field() -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        label="Also send",
        required=False,
        choices=[(name, f"{name}: {says}") for name, says in OPTIONAL_EVENTS.items()],
        widget=forms.CheckboxSelectMultiple,
        help_text=EVENTS_HELP,
        error_messages={"invalid_choice": "Choose among the events listed."},
    )


class OneTimeForm(forms.Form):
    """A form that carries a one-time key (see views._use_form_key): sent
    twice (the back button, a double click), it acts once."""

    form_key = forms.CharField(widget=forms.HiddenInput)


class EndpointCreateForm(OneTimeForm):
    external_system = TextField(
        label="External system",
        max_length=EXTERNAL_SYSTEM_MAX,
        strip=True,
        help_text=(
            "The externalSystem your integration sends to the inbox, exactly (e.g. “jira”). "
            "Events about its commitments go to this endpoint."
        ),
    )
    url = _url_field()
    events = _events_field()
    field_order = ["external_system", "url", "events", "form_key"]


class EndpointEventsForm(forms.Form):
    """The optional events one endpoint receives. Several of these are on one
    page (one per endpoint): each is made with its own `auto_id`."""

    events = _events_field()


class EndpointUrlForm(forms.Form):
    url = _url_field()


def add_service_error(form: forms.Form, error: WebhookError) -> None:
    """Put a service's refusal on the field it names (or on the whole form)."""
    field = error.field if error.field in form.fields else None
    form.add_error(field, error.message)
