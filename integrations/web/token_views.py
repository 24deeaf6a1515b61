"""Settings, API Tokens: mint (plaintext shown once), list, revoke."""

from __future__ import annotations

import uuid

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods, require_POST

from audit.services import Actor
from integrations import services
from integrations.models import ApiToken


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=services.TOKEN_NAME_MAX,
        strip=True,
        help_text="What the token is for, e.g. “Jira automation”. Only you see it.",
    )


@login_required
@require_http_methods(["GET", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    minted = None
    form = TokenForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            minted = services.api_token_mint(user=request.user, name=form.cleaned_data["name"])
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            form = TokenForm()
    # Active tokens first (NULL revoked_at), newest first; NULL ordering differs by database.
    tokens = ApiToken.objects.filter(user=request.user).order_by(
        F("revoked_at").desc(nulls_first=True), "-created_at"
    )
    response = render(
        request,
        "integrations/tokens.html",
        {"form": form, "minted": minted, "tokens": tokens},
        status=400 if form.errors else 200,
    )
    if minted is not None:
        # The plaintext is in this page and nowhere else: keep it out of every
        # cache. Reloading re-submits the form (and mints another token), it
        # never shows this one again.
        add_never_cache_headers(response)
    return response


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: uuid.UUID) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=token_id, user=request.user)
    if services.api_token_revoke(actor=Actor.for_user(request.user), token=token):
        messages.success(request, f"Revoked “{token.name}”. Requests with it are refused now.")
    else:
        messages.info(request, f"“{token.name}” was already revoked.")
    return redirect("api_tokens")
