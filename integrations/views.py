"""Settings, API Tokens: mint (plaintext shown once), list, revoke.

Minting is POST-redirect-GET. The POST mints and puts the plaintext in the
session; the GET that follows shows it once and removes it. Each rendered form
carries a one-time key kept in the session, and a POST whose key was already
used (the browser's back button and resubmit, a double click) mints nothing.
The page asks for the password again, before showing the form, when the
sign-in is not recent; a stale POST is refused and kept nowhere (accounts.reauth).
"""

from __future__ import annotations

import uuid

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from accounts.reauth import recent_sign_in_required
from accounts.requests import AuthenticatedRequest
from audit.services import Actor
from integrations import services
from integrations.models import SCOPES, ApiToken
from lib.forms import TextField
from lib.once import form_key_new, form_key_use

MINTED_KEY = "integrations.minted_token"  # the plaintext, until the next GET shows it
FORM_SCOPE = "integrations.tokens"  # lib.once: its one-time form keys


class TokenForm(forms.Form):
    name = TextField(
        max_length=services.TOKEN_NAME_MAX,
        strip=True,
        help_text=(
            "What the token is for, e.g. “Jira automation”. The timeline of a commitment "
            "it creates or completes names it, so the people involved see it."
        ),
    )
    expires_on = forms.DateField(
        required=False,
        label="Expires on (optional)",
        help_text="The token works through this day (your time zone), then is refused.",
        widget=forms.DateInput(attrs={"type": "date"}),
    )
    scopes = forms.MultipleChoiceField(
        choices=[
            ("inbox", "inbox: create commitments (POST /api/v1/inbox)"),
            ("sync", "sync: complete them (POST /api/v1/sync)"),
            ("read", "read: read your commitments (GET /api/v1/commitments)"),
        ],
        initial=list(SCOPES),
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Choose at least one scope."},
        help_text="What the token may call. Anything else is refused with 403 forbidden.",
    )
    networks = forms.CharField(
        required=False,
        label="Allowed client networks (optional)",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "203.0.113.0/24\n2001:db8::/32"}),
        help_text=(
            "CIDR networks or single addresses, IPv4 or IPv6, one per line or separated by "
            "commas. Calls from any other address are refused. Empty: any address."
        ),
    )
    form_key = forms.CharField(widget=forms.HiddenInput)

    def clean_networks(self) -> list[str]:
        text = self.cleaned_data["networks"]
        return [part for part in text.replace(",", "\n").split() if part]


def _render(
    request: AuthenticatedRequest, form: TokenForm, minted: dict | None = None, status: int = 200
) -> HttpResponse:
    # Active tokens first (NULL revoked_at), newest first; NULL ordering differs by database.
    tokens = ApiToken.objects.filter(user=request.user).order_by(
        F("revoked_at").desc(nulls_first=True), "-created_at"
    )
    return render(
        request,
        "integrations/tokens.html",
        {"form": form, "minted": minted, "tokens": tokens, "now": timezone.now()},
        status=status,
    )


@never_cache  # the one page that may hold a plaintext: kept out of every cache
@login_required
@recent_sign_in_required
@require_http_methods(["GET", "POST"])
def token_list(request: AuthenticatedRequest) -> HttpResponse:
    if request.method == "GET":
        minted = request.session.pop(MINTED_KEY, None)  # shown once, then gone
        return _render(
            request,
            TokenForm(initial={"form_key": form_key_new(request, scope=FORM_SCOPE)}),
            minted,
        )

    form = TokenForm(request.POST)
    if not form.is_valid():
        return _refused(request)
    if not form_key_use(request, form.cleaned_data["form_key"], scope=FORM_SCOPE):
        # A form sent again: the token it asked for was minted (or refused) already.
        messages.info(request, "That form was already sent; no new token was created.")
        return redirect("api_tokens")
    expires_at = None
    if expires_on := form.cleaned_data["expires_on"]:
        expires_at = services.expiry_at_end_of(expires_on, request.user.timezone)
    try:
        minted = services.api_token_mint(
            user=request.user,
            name=form.cleaned_data["name"],
            expires_at=expires_at,
            scopes=form.cleaned_data["scopes"],
            networks=form.cleaned_data["networks"],
        )
    except ValidationError as exc:
        return _refused(request, exc.message_dict)
    token = minted.token
    request.session[MINTED_KEY] = {"name": token.name, "plaintext": minted.plaintext}
    return redirect("api_tokens")


def _refused(
    request: AuthenticatedRequest, errors: dict[str, list[str]] | None = None
) -> HttpResponse:
    """The form as sent, with its errors and a fresh one-time key for the next try."""
    data = request.POST.copy()
    data["form_key"] = form_key_new(request, scope=FORM_SCOPE)
    form = TokenForm(data)
    form.is_valid()
    for field, field_errors in (errors or {}).items():
        form.add_error("expires_on" if field == "expires_at" else field, field_errors)
    return _render(request, form, status=400)


@login_required
@require_http_methods(["GET", "POST"])
def token_revoke(request: HttpRequest, token_id: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation, naming the token; POST revokes it."""
    token = get_object_or_404(ApiToken, pk=token_id, user=request.user)
    if request.method == "GET":
        return render(request, "integrations/token_revoke.html", {"token": token})
    if services.api_token_revoke(actor=Actor.for_user(request.user), token=token):
        messages.success(request, f"Revoked “{token.name}”. Requests with it are refused now.")
    else:
        messages.info(request, f"“{token.name}” was already revoked.")
    return redirect("api_tokens")
