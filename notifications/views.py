"""Settings, Notifications: choose how you are nudged, send a test, see a
broken channel and why."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from notifications import channels
from notifications.models import ChannelKind, Delivery


class ChannelForm(forms.Form):
    kind = forms.ChoiceField(
        label="Nudge me by",
        choices=ChannelKind.choices,
        widget=forms.RadioSelect,
    )
    webhook_url = forms.CharField(
        label="Webhook URL (Slack or Teams)",
        required=False,
        max_length=channels.WEBHOOK_URL_MAX,
        strip=True,
        widget=forms.URLInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
        help_text=(
            "Slack: an incoming webhook URL (https://hooks.slack.com/services/…). "
            "Teams: the URL of a workflow started by “When a Teams webhook request is "
            "received”. Stored encrypted and never shown again in full; leave empty to "
            "keep the saved one."
        ),
    )


@login_required
@require_http_methods(["GET", "POST"])
def notification_settings(request: HttpRequest) -> HttpResponse:
    channel = channels.notification_channel_get(user=request.user)
    if request.method == "POST":
        form = ChannelForm(request.POST)
        if form.is_valid():
            try:
                channels.notification_channel_set(
                    user=request.user,
                    kind=form.cleaned_data["kind"],
                    webhook_url=form.cleaned_data["webhook_url"],
                )
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, "Saved. Send a test to check it.")
                return redirect("notification_settings")
    else:
        form = ChannelForm(initial={"kind": channel.kind if channel else ChannelKind.EMAIL})
    recent = (
        Delivery.objects.filter(recipient=request.user)
        .select_related("event__commitment")
        .order_by("-created_at")[:10]
    )
    return render(
        request,
        "notifications/settings.html",
        {
            "form": form,
            "channel": channel,
            "destination": channels.destination_for(request.user, channel=channel),
            "recent": recent,
            "last_test": channels.notification_test_latest(user=request.user),
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def notification_test(request: HttpRequest) -> HttpResponse:
    """Queue a test; a worker sends it and the page shows how it went."""
    try:
        channels.notification_test_request(user=request.user)
    except channels.TestTooSoon as exc:
        messages.warning(request, str(exc))
    else:
        messages.info(request, "Test queued. Reload this page in a moment to see how it went.")
    return redirect("notification_settings")
