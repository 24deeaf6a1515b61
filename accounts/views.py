"""Settings: the index of everything a person configures, and their profile."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.forms import ProfileForm
from audit.services import Actor, audit_event_record


def _render_index(request: HttpRequest, form: ProfileForm, status: int = 200) -> HttpResponse:
    return render(request, "accounts/settings.html", {"form": form}, status=status)


@login_required
@require_http_methods(["GET"])
def settings_index(request: HttpRequest) -> HttpResponse:
    return _render_index(request, ProfileForm(instance=request.user))


@login_required
@require_http_methods(["GET", "POST"])
def profile_update(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return redirect("accounts:settings")
    form = ProfileForm(request.POST, instance=request.user)
    if not form.is_valid():
        return _render_index(request, form, status=400)
    # The old values are the form's initial ones (the instance already holds the new).
    changes = {
        name: {"old": form.initial.get(name), "new": form.cleaned_data[name]}
        for name in form.changed_data
    }
    with transaction.atomic():
        form.save()
        if changes:
            audit_event_record(
                actor=Actor.for_user(request.user),
                subject=request.user,
                action="user_profile_changed",
                payload={"changes": changes},
            )
    messages.success(request, "Profile saved.")
    return redirect("accounts:settings")
