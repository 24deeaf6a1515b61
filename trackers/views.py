"""Settings, Tracker connections: add (the secret shown once), the connection's
page (its receiving URL, identity map and last 50 events), rotate the secret,
delete.

Adding and rotating are POST-redirect-GET, like minting an API token: the POST
puts the secret in the session, the GET that follows shows it once and removes
it; a one-time form key makes a resent form do nothing. The pages ask for the
password again when the sign-in is not recent (accounts.reauth).
"""

from __future__ import annotations

import uuid

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from accounts.reauth import recent_sign_in_required
from accounts.requests import AuthenticatedRequest
from commitments.models import EXTERNAL_SYSTEM_MAX
from lib.forms import TextField
from lib.once import form_key_new, form_key_use
from trackers import selectors, services
from trackers.kinds import Kind, tracker_for
from trackers.models import SITE_MAX, TrackerConnection

SHOWN_KEY = "trackers.secret"  # {"connection": id, "secret": ...} until the next GET
FORM_SCOPE = "trackers.connections"


def hook_url(connection: TrackerConnection) -> str:
    return settings.SITE_URL + reverse("tracker-hook", args=[connection.hook_id])


def identity_text(identity_map: dict[str, str]) -> str:
    return "\n".join(f"{name}={email}" for name, email in sorted(identity_map.items()))


IDENTITY_HELP = (
    "One per line: the tracker's user, =, their e-mail address here. The user is named by "
    "GitHub login, GitLab username, Linear user id or Jira accountId (Jira Server: the user "
    "name), never by display name; the connection's log shows the one to map. This map wins "
    "over an address the tracker sends."
)


class ConnectionForm(forms.Form):
    kind = forms.ChoiceField(choices=Kind.choices, label="Tracker")
    system = TextField(
        max_length=EXTERNAL_SYSTEM_MAX,
        required=False,
        label="System name (optional)",
        help_text=(
            "The externalSystem its commitments carry (default: the tracker's name, e.g. github)."
        ),
    )
    site = TextField(
        max_length=SITE_MAX,
        required=False,
        label="Tracker's site (optional)",
        help_text=(
            "Its host, e.g. jira.example.com: issue links are used only when they are https "
            "there. Blank: github.com, linear.app; for GitLab and Jira, the host of the first "
            "delivery."
        ),
    )
    identities = TextField(
        required=False,
        label="People (optional)",
        widget=forms.Textarea(attrs={"rows": 4, "placeholder": "octocat=ada@example.com"}),
        help_text=IDENTITY_HELP,
    )
    form_key = forms.CharField(widget=forms.HiddenInput)


class IdentitiesForm(forms.Form):
    identities = TextField(
        required=False,
        label="People",
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text=IDENTITY_HELP,
    )


class SiteForm(forms.Form):
    site = TextField(
        max_length=SITE_MAX,
        required=False,
        label="Tracker's site",
        help_text=(
            "The host its issue links must be on (https), e.g. jira.example.com or "
            "gitlab.example.com:8443. Blank for GitHub and Linear: their own host; for GitLab "
            "and Jira: learnt from the next delivery."
        ),
    )


class TrackerSecretForm(forms.Form):
    secret = forms.CharField(
        label="Linear's signing secret",
        widget=forms.PasswordInput(render_value=False),
        help_text=(
            "Linear makes its own signing secret and shows it on the webhook's page; paste it "
            "here and deliveries are checked with it instead of the secret shown to you."
        ),
    )


def _show_once(
    request: HttpRequest, connection: TrackerConnection, secret: str, *, new: bool
) -> None:
    """Keep the secret for the GET that follows (trackers/_shown.html), which removes it."""
    request.session[SHOWN_KEY] = {
        "label": connection.label,
        "kind": connection.get_kind_display(),
        "url": hook_url(connection),
        "secret": secret,
        "new": new,
    }


def _mine(request: AuthenticatedRequest, connection_id: uuid.UUID) -> TrackerConnection:
    connection = selectors.connection_of(owner=request.user, connection_id=connection_id)
    if connection is None:
        raise Http404("No such tracker connection.")
    return connection


def _list(
    request: AuthenticatedRequest, form: ConnectionForm, *, status: int = 200
) -> HttpResponse:
    shown = request.session.pop(SHOWN_KEY, None) if request.method == "GET" else None
    return render(
        request,
        "trackers/list.html",
        {
            "form": form,
            "connections": list(selectors.connections_of(owner=request.user)),
            "shown": shown,
        },
        status=status,
    )


@never_cache  # may hold a secret
@login_required
@recent_sign_in_required
@require_http_methods(["GET", "POST"])
def connection_list(request: AuthenticatedRequest) -> HttpResponse:
    if request.method == "GET":
        key = form_key_new(request, scope=FORM_SCOPE)
        return _list(request, ConnectionForm(initial={"form_key": key}))
    form = ConnectionForm(request.POST)
    if not form.is_valid():
        return _refused(request)
    if not form_key_use(request, form.cleaned_data["form_key"], scope=FORM_SCOPE):
        messages.info(request, "That form was already sent; no new connection was added.")
        return redirect("tracker_connections")
    try:
        identity_map = services.parse_identity_lines(form.cleaned_data["identities"])
        connection, secret = services.tracker_connection_add(
            owner=request.user,
            kind=form.cleaned_data["kind"],
            system=form.cleaned_data["system"],
            identity_map=identity_map,
            site=form.cleaned_data["site"],
        )
    except services.TrackerError as exc:
        return _refused(request, exc)
    _show_once(request, connection, secret, new=True)
    return redirect("tracker_connections")


def _refused(
    request: AuthenticatedRequest, error: services.TrackerError | None = None
) -> HttpResponse:
    data = request.POST.copy()
    data["form_key"] = form_key_new(request, scope=FORM_SCOPE)
    form = ConnectionForm(data)
    form.is_valid()
    if error is not None:
        fields = {"identity_map": "identities", "system": "system", "kind": "kind", "site": "site"}
        field = fields.get(error.field)
        form.add_error(field, error.message)
    return _list(request, form, status=400)


@never_cache
@login_required
@recent_sign_in_required
@require_http_methods(["GET", "POST"])
def connection_detail(request: AuthenticatedRequest, connection_id: uuid.UUID) -> HttpResponse:
    """The connection's page; POST saves its identity map."""
    connection = _mine(request, connection_id)
    status = 200
    if request.method == "POST":
        form = IdentitiesForm(request.POST)
        if form.is_valid():
            try:
                mapping = services.parse_identity_lines(form.cleaned_data["identities"])
                services.tracker_connection_set_identity_map(
                    connection=connection, identity_map=mapping
                )
            except services.TrackerError as exc:
                form.add_error("identities", exc.message)
                status = 400
            else:
                messages.success(request, f"Saved the people of the {connection.label}.")
                return redirect("tracker_connection", connection_id=connection.pk)
        else:
            status = 400
    else:
        form = IdentitiesForm(initial={"identities": identity_text(connection.identity_map)})
    shown = None
    if request.method == "GET":
        shown = request.session.pop(SHOWN_KEY, None)
    return render(
        request,
        "trackers/detail.html",
        {
            "connection": connection,
            "url": hook_url(connection),
            "form": form,
            "events": selectors.recent_events(connection=connection),
            "tracker_secret_form": (
                TrackerSecretForm() if tracker_for(connection.kind).makes_own_secret else None
            ),
            "site_form": SiteForm(initial={"site": connection.site}),
            "shown": shown,
        },
        status=status,
    )


@login_required
@recent_sign_in_required
@require_http_methods(["GET", "POST"])
def connection_rotate(request: AuthenticatedRequest, connection_id: uuid.UUID) -> HttpResponse:
    connection = _mine(request, connection_id)
    if request.method == "GET":
        return render(request, "trackers/rotate.html", {"connection": connection})
    secret = services.tracker_connection_rotate_secret(connection=connection)
    _show_once(request, connection, secret, new=False)
    return redirect("tracker_connection", connection_id=connection.pk)


@login_required
@recent_sign_in_required
@require_http_methods(["POST"])
def connection_tracker_secret(
    request: AuthenticatedRequest, connection_id: uuid.UUID
) -> HttpResponse:
    """Use the secret a tracker made (one that `makes_own_secret`: Linear)
    instead of ours."""
    connection = _mine(request, connection_id)
    form = TrackerSecretForm(request.POST)
    if form.is_valid():
        try:
            services.tracker_connection_use_tracker_secret(
                connection=connection, secret=form.cleaned_data["secret"]
            )
        except services.TrackerError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(
                request,
                f"The {connection.label} now checks {connection.get_kind_display()}'s secret.",
            )
    else:
        messages.error(request, "Paste the signing secret.")
    return redirect("tracker_connection", connection_id=connection.pk)


@login_required
@recent_sign_in_required
@require_http_methods(["POST"])
def connection_site(request: AuthenticatedRequest, connection_id: uuid.UUID) -> HttpResponse:
    """Set the host whose https issue links the connection uses."""
    connection = _mine(request, connection_id)
    form = SiteForm(request.POST)
    if form.is_valid():
        try:
            services.tracker_connection_set_site(
                connection=connection, site=form.cleaned_data["site"]
            )
        except services.TrackerError as exc:
            messages.error(request, exc.message)
        else:
            where = connection.site or "the host of the next delivery"
            messages.success(request, f"The {connection.label} now links issues on {where}.")
    else:
        messages.error(request, "Write the tracker's host.")
    return redirect("tracker_connection", connection_id=connection.pk)


@login_required
@require_http_methods(["GET", "POST"])
def connection_delete(request: AuthenticatedRequest, connection_id: uuid.UUID) -> HttpResponse:
    connection = _mine(request, connection_id)
    if request.method == "GET":
        return render(request, "trackers/delete.html", {"connection": connection})
    label = connection.label
    services.tracker_connection_delete(connection=connection)
    messages.success(request, f"Deleted the {label}. Its commitments stay as they are.")
    return redirect("tracker_connections")
