"""Settings, Notifications: choose how you are nudged, send a test, see a
broken channel and why."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.requests import AuthenticatedRequest
from lib.api_errors import envelope
from notifications import services
from notifications.models import ChannelKind, NewsKind, NewsWhen, NudgeDelivery


class ChannelForm(forms.Form):
    kind = forms.ChoiceField(
        label="Nudge me by",
        choices=ChannelKind.choices,
        widget=forms.RadioSelect,
    )
    chat_url = forms.CharField(
        label="Chat URL (Slack or Teams)",
        required=False,
        max_length=services.CHAT_URL_MAX,
        strip=True,
        widget=forms.URLInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
        help_text=(
            "Slack: an incoming webhook URL (https://hooks.slack.com/services/…). "
            "Teams: the URL of a workflow started by “When a Teams webhook request is "
            "received”. Stored encrypted and never shown again in full; leave empty to "
            "keep the saved one."
        ),
    )


def _news_field(label: str, help_text: str) -> forms.ChoiceField:
    # Not required: a post without it (an older page) keeps the choice.
    return forms.ChoiceField(
        label=label,
        choices=NewsWhen.choices,
        widget=forms.RadioSelect,
        help_text=help_text,
        required=False,
    )


class NewsForm(forms.Form):
    """When each kind of news reaches the person (NewsKind): at once, in the
    daily digest, or not at all."""

    news_asked = _news_field(
        "Asked of me",
        "A request, a changed request, a request handed to you, other terms proposed or "
        "more time asked for one of your requests.",
    )
    news_answered = _news_field(
        "Answered",
        "Accepted, declined, completed, more time granted or declined, withdrawn, or "
        "handed to someone else.",
    )
    news_commented = _news_field("Commented", "A comment on a commitment of yours.")
    news_reminders = _news_field(
        "Reminders",
        "The day before a deadline of yours, when it passes, and when a request or proposal "
        "of yours has waited two days for an answer; at once means at most one message an "
        "hour.",
    )

    def news(self) -> dict[str, str]:
        chosen = {kind: self.cleaned_data[f"news_{kind}"] for kind in NewsKind.values}
        return {kind: when for kind, when in chosen.items() if when}


@login_required
@require_http_methods(["GET", "POST"])
def notification_settings(request: AuthenticatedRequest) -> HttpResponse:
    channel = services.notification_channel_get(user=request.user)
    initial = {
        f"news_{kind}": channel.news_when(kind) if channel else NewsWhen.NOW
        for kind in NewsKind.values
    }
    initial["kind"] = channel.kind if channel else ChannelKind.EMAIL
    if request.method == "POST":
        form = ChannelForm(request.POST)
        news_form = NewsForm(request.POST, initial=initial)
        if form.is_valid() and news_form.is_valid():
            try:
                services.notification_channel_set(
                    user=request.user,
                    kind=form.cleaned_data["kind"],
                    chat_url=form.cleaned_data["chat_url"],
                    news=news_form.news(),
                )
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, "Saved. Send a test to check it.")
                return redirect("notification_settings")
    else:
        form = ChannelForm(initial=initial)
        news_form = NewsForm(initial=initial)
    recent = (
        NudgeDelivery.objects.filter(recipient=request.user)
        .select_related("event__commitment", "reminder__commitment")
        .order_by("-created_at")[:10]
    )
    # A chat URL no key decrypts any more is marked broken when first met.
    services.notification_channel_url_lost_record(user=request.user, channel=channel)
    return render(
        request,
        "notifications/settings.html",
        {
            "form": form,
            "news_form": news_form,
            "digest_hour": settings.DIGEST_HOUR,
            "channel": channel,
            "destination": services.destination_for(request.user, channel=channel),
            "recent": recent,
            "last_test": services.test_nudge_latest(user=request.user),
        },
        status=400 if form.errors or news_form.errors else 200,
    )


@login_required
@require_POST
def test_nudge(request: AuthenticatedRequest) -> HttpResponse:
    """Queue a test; a worker sends it and the page shows how it went."""
    try:
        services.test_nudge_request(user=request.user)
    except services.TestTooSoon as exc:
        messages.warning(request, str(exc))
    else:
        messages.info(request, "Test queued. Its result appears below when it arrives.")
    return redirect("notification_settings")


@require_GET
def test_nudge_status(request: HttpRequest, test_id) -> JsonResponse:
    """Where a test stands, for the page's script (static/js/test_nudge.js),
    which polls it until the test is done: JSON, by the session (the person's
    own tests only), with the page's fragment for it."""
    if not request.user.is_authenticated:
        return JsonResponse(envelope("unauthorized", "Sign in to see your tests.", {}), status=401)
    test = services.test_nudge_get(user=request.user, test_id=test_id)
    if test is None:
        return JsonResponse(envelope("not_found", "No such test of yours.", {}), status=404)
    html = render_to_string("notifications/_test_result.html", {"last_test": test})
    return JsonResponse(
        {
            "id": str(test.pk),
            "status": test.status,
            "done": test.is_done,
            "kind": test.kind,
            "detail": test.detail,
            "html": html,
        },
        headers={"Cache-Control": "no-store"},
    )
