"""Settings, Webhooks: register an endpoint per external system (its secret
shown once), change its URL, pause, resume, delete it, send it a test event,
rotate its secret (the new one shown once), see its recent deliveries and
replay the ones that failed for good.

Creating an endpoint and rotating a secret are POST-redirect-GET, like
minting an API token: the POST puts the secret in the session, the GET that
follows shows it once and removes it, and the page is never cached. Both
forms carry a one-time key, so a form sent twice acts once (a second
rotation would silently end the 24 hours the first secret still signs).
They, and changing a URL (which sends the events elsewhere), ask for the
password again when the sign-in is not recent.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.reauth import recent_sign_in_required
from accounts.requests import AuthenticatedRequest
from audit.services import Actor
from lib.api_errors import envelope
from lib.once import form_key_new, form_key_use
from webhooks import selectors, services
from webhooks.errors import WebhookError, WebhookTestTooSoon
from webhooks.forms import (
    EndpointCreateForm,
    EndpointEventsForm,
    EndpointUrlForm,
    OneTimeForm,
    add_service_error,
)
from webhooks.models import WebhookDeliveryStatus, WebhookEndpoint
from webhooks.selectors import delivery_outcome_text

NEW_SECRET_KEY = "webhooks.new_secret"  # the secret, until the next GET shows it
FORM_SCOPE = "webhooks"  # lib.once: its one-time form keys
DOCS = Path(settings.BASE_DIR) / "docs" / "webhooks.md"


def _endpoint_or_404(request: AuthenticatedRequest, endpoint_id: uuid.UUID) -> WebhookEndpoint:
    endpoint = selectors.webhook_endpoint_of(user=request.user, endpoint_id=endpoint_id)
    if endpoint is None:
        raise Http404("No such endpoint.")
    return endpoint


def _keep_secret(
    request: HttpRequest, endpoint: WebhookEndpoint, secret: str, *, rotated: bool
) -> None:
    request.session[NEW_SECRET_KEY] = {
        "endpoint": str(endpoint.pk),
        "external_system": endpoint.external_system,
        "secret": secret,
        "rotated": rotated,
    }


def _events_form(endpoint: WebhookEndpoint, data=None) -> EndpointEventsForm:
    """The events form of one endpoint: ids of its own (several on a page)."""
    return EndpointEventsForm(
        data,
        initial={"events": endpoint.chosen_events},
        auto_id=f"events-{endpoint.pk}-%s",
    )


def _render_list(
    request: AuthenticatedRequest,
    form: EndpointCreateForm,
    new_secret: dict | None = None,
    status=200,
    events_form: tuple[uuid.UUID, EndpointEventsForm] | None = None,
) -> HttpResponse:
    """The page; `events_form`: an endpoint's events form as it was sent
    and refused, shown open with its error in place of a fresh one."""
    endpoints = selectors.webhook_endpoints_for_page(user=request.user)
    for endpoint in endpoints:
        if events_form is not None and events_form[0] == endpoint.pk:
            endpoint.events_form = events_form[1]
        else:
            endpoint.events_form = _events_form(endpoint)
    return render(
        request,
        "webhooks/list.html",
        {
            "form": form,
            "new_secret": new_secret,
            "endpoints": endpoints,
            "overlap_hours": settings.WEBHOOK_ROTATION_OVERLAP // 3600,
            "now": timezone.now(),
        },
        status=status,
    )


@never_cache  # the page that shows a secret once: kept out of every cache
@login_required
@recent_sign_in_required
@require_http_methods(["GET", "POST"])
def webhook_list(request: AuthenticatedRequest) -> HttpResponse:
    if request.method == "GET":
        new_secret = request.session.pop(NEW_SECRET_KEY, None)  # shown once, then gone
        form = EndpointCreateForm(initial={"form_key": form_key_new(request, scope=FORM_SCOPE)})
        return _render_list(request, form, new_secret)

    form = EndpointCreateForm(request.POST)
    if form.is_valid():
        if not form_key_use(request, form.cleaned_data["form_key"], scope=FORM_SCOPE):
            messages.info(request, "That form was already sent; nothing more was registered.")
            return redirect("webhooks")
        try:
            endpoint, secret = services.webhook_endpoint_create(
                user=request.user,
                external_system=form.cleaned_data["external_system"],
                url=form.cleaned_data["url"],
                events=form.cleaned_data["events"],
            )
        except WebhookError as exc:
            add_service_error(form, exc)
        else:
            _keep_secret(request, endpoint, secret, rotated=False)
            return redirect("webhooks")
    # Refused: the form as sent, its errors, and a fresh key for the next try.
    data = request.POST.copy()
    data["form_key"] = form_key_new(request, scope=FORM_SCOPE)
    refused = EndpointCreateForm(data)
    refused.is_valid()
    for field, errors in form.errors.items():
        for error in errors:
            if error not in refused.errors.get(field, []):
                refused.add_error(None if field == "__all__" else field, error)
    return _render_list(request, refused, status=400)


@login_required
@recent_sign_in_required  # events would go to the new URL: a fresh sign-in, as for a secret
@require_http_methods(["GET", "POST"])
def webhook_edit(request: AuthenticatedRequest, endpoint_id: uuid.UUID) -> HttpResponse:
    endpoint = _endpoint_or_404(request, endpoint_id)
    if request.method == "GET":
        form = EndpointUrlForm(initial={"url": "" if endpoint.url_lost else endpoint.url})
    else:
        form = EndpointUrlForm(request.POST)
        if form.is_valid():
            try:
                services.webhook_endpoint_update(endpoint=endpoint, url=form.cleaned_data["url"])
            except WebhookError as exc:
                add_service_error(form, exc)
            else:
                messages.success(
                    request, f"Saved the URL of the {endpoint.external_system} endpoint."
                )
                return redirect("webhooks")
    return render(
        request,
        "webhooks/edit.html",
        {"endpoint": endpoint, "form": form},
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def webhook_events(request: AuthenticatedRequest, endpoint_id: uuid.UUID) -> HttpResponse:
    """Choose the optional events an endpoint receives (the checkboxes under
    "Events" on its card). A choice that names no listed event is refused
    with the page again, the form open with its error, and nothing changed."""
    endpoint = _endpoint_or_404(request, endpoint_id)
    form = _events_form(endpoint, request.POST)
    if form.is_valid():
        try:
            endpoint = services.webhook_endpoint_choose_events(
                endpoint=endpoint, events=form.cleaned_data["events"]
            )
        except WebhookError as exc:
            add_service_error(form, exc)
        else:
            chosen = endpoint.chosen_events
            messages.success(
                request,
                f"Saved the events of the {endpoint.external_system} endpoint: the four status "
                "events" + (", and " + ", ".join(n for n in chosen) if chosen else " only") + ".",
            )
            return redirect(f"{reverse('webhooks')}#endpoint-{endpoint.pk}")
    create = EndpointCreateForm(initial={"form_key": form_key_new(request, scope=FORM_SCOPE)})
    return _render_list(request, create, status=400, events_form=(endpoint.pk, form))


@login_required
@require_POST
def webhook_pause(request: AuthenticatedRequest, endpoint_id: uuid.UUID) -> HttpResponse:
    endpoint = _endpoint_or_404(request, endpoint_id)
    if endpoint.is_paused:
        messages.info(request, f"The {endpoint.external_system} endpoint was already paused.")
    else:
        services.webhook_endpoint_pause(endpoint=endpoint, reason="Paused by you.")
        messages.success(
            request,
            f"Paused the {endpoint.external_system} endpoint: nothing is sent to it until you "
            "resume it.",
        )
    return redirect("webhooks")


@login_required
@require_POST
def webhook_resume(request: AuthenticatedRequest, endpoint_id: uuid.UUID) -> HttpResponse:
    endpoint = _endpoint_or_404(request, endpoint_id)
    if not endpoint.is_paused:
        messages.info(request, f"The {endpoint.external_system} endpoint is not paused.")
    else:
        services.webhook_endpoint_resume(endpoint=endpoint)
        messages.success(
            request,
            f"Resumed the {endpoint.external_system} endpoint. Deliveries that failed while it "
            "was paused can be replayed below.",
        )
    return redirect("webhooks")


@login_required
@require_http_methods(["GET", "POST"])
def webhook_delete(request: AuthenticatedRequest, endpoint_id: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation, naming the endpoint; POST deletes it."""
    endpoint = _endpoint_or_404(request, endpoint_id)
    if request.method == "GET":
        return render(request, "webhooks/delete.html", {"endpoint": endpoint})
    services.webhook_endpoint_delete(endpoint=endpoint)
    messages.success(
        request,
        f"Deleted the {endpoint.external_system} endpoint ({endpoint.masked_url}) and its "
        "deliveries.",
    )
    return redirect("webhooks")


@login_required
@require_POST
def webhook_test(request: AuthenticatedRequest, endpoint_id: uuid.UUID) -> HttpResponse:
    endpoint = _endpoint_or_404(request, endpoint_id)
    if endpoint.secret_lost:
        messages.warning(request, "This endpoint's secret cannot be read; rotate it first.")
        return redirect("webhooks")
    try:
        services.webhook_test_send(endpoint=endpoint)
    except WebhookTestTooSoon as exc:
        messages.warning(request, exc.message)
        return redirect("webhooks")
    messages.info(
        request,
        f"Test event (commitment.test) queued for the {endpoint.external_system} endpoint. "
        "Its result shows under the endpoint when it arrives.",
    )
    return redirect(f"{reverse('webhooks')}#endpoint-{endpoint.pk}")


@never_cache
@require_GET
def webhook_delivery_status(request: HttpRequest, delivery_id: uuid.UUID) -> JsonResponse:
    """How one of the signed-in person's deliveries stands, as JSON, for the
    Webhooks page's script (static/js/webhooks.js) to show a test's result
    when it arrives: `status`, `done` (nothing more will change without a
    replay), `statusCode` and `text` (the sentence the page shows). Errors
    in the API's envelope: 401 signed out, 404 for another person's."""
    if not request.user.is_authenticated:
        return JsonResponse(envelope("unauthorized", "Sign in again."), status=401)
    delivery = selectors.webhook_delivery_of(user=request.user, delivery_id=delivery_id)
    if delivery is None:
        return JsonResponse(envelope("not_found", "No such delivery."), status=404)
    return JsonResponse(
        {
            "id": str(delivery.pk),
            "status": delivery.status,
            "done": delivery.status
            in (WebhookDeliveryStatus.DELIVERED, WebhookDeliveryStatus.FAILED),
            "statusCode": delivery.last_status_code,
            "text": delivery_outcome_text(delivery),
        }
    )


@never_cache
@login_required
@recent_sign_in_required
@require_http_methods(["GET", "POST"])
def webhook_rotate(request: AuthenticatedRequest, endpoint_id: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation; POST rotates, and the list shows the new
    secret once."""
    endpoint = _endpoint_or_404(request, endpoint_id)
    if request.method == "POST":
        form = OneTimeForm(request.POST)
        if form.is_valid() and form_key_use(
            request, form.cleaned_data["form_key"], scope=FORM_SCOPE
        ):
            secret = services.webhook_endpoint_rotate_secret(endpoint=endpoint)
            _keep_secret(request, endpoint, secret, rotated=True)
        else:
            messages.info(request, "That form was already sent; the secret was not rotated again.")
        return redirect("webhooks")
    form = OneTimeForm(initial={"form_key": form_key_new(request, scope=FORM_SCOPE)})
    return render(
        request,
        "webhooks/rotate.html",
        {
            "endpoint": endpoint,
            "form": form,
            "overlap_hours": settings.WEBHOOK_ROTATION_OVERLAP // 3600,
            "now": timezone.now(),
        },
    )


@login_required
@require_POST
def webhook_replay(request: AuthenticatedRequest, delivery_id: uuid.UUID) -> HttpResponse:
    delivery = selectors.webhook_delivery_of(user=request.user, delivery_id=delivery_id)
    if delivery is None:
        raise Http404("No such delivery.")
    try:
        services.webhook_delivery_replay(delivery=delivery, actor=Actor.for_user(request.user))
    except WebhookError as exc:
        messages.warning(request, exc.message)
    else:
        messages.info(
            request,
            f"Replaying {delivery.event_name} (delivery {delivery.pk}): same delivery id, signed "
            "with the current secret. Reload this page in a moment to see how it went.",
        )
    return redirect("webhooks")


@require_GET
def webhook_docs(request: HttpRequest) -> HttpResponse:
    """The receiver documentation (docs/webhooks.md), as plain text: for the
    integrator's developers, who may have no account here."""
    return HttpResponse(DOCS.read_bytes(), content_type="text/plain; charset=utf-8")
