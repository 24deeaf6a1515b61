"""The capture page (/capture/). Gathering is the page's script calling POST
/api/gather (session cookie and CSRF header); saving the chosen drafts is a
plain form POST to this same page, so it works without the script too."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.requests import AuthenticatedRequest
from audit.services import Actor
from gather import selectors as gather_selectors
from gather import services
from gather.api import model_keys_path
from gather.forms import CaptureForm, DraftFormSet


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def capture(request: AuthenticatedRequest) -> HttpResponse:
    status = 200
    if request.method == "POST":
        form = CaptureForm(request.POST)
        drafts = DraftFormSet(request.POST, prefix="drafts")
        if form.is_valid() and drafts.is_valid():
            saved = services.capture_drafts_save(
                actor=Actor.for_user(request.user),
                drafts=drafts.chosen(),
                raw_text=form.cleaned_data["raw_text"],
            )
            count = len(saved)
            messages.success(
                request,
                f"Saved {count} draft{'s' if count != 1 else ''}. Nobody is asked until you "
                "send a draft for the handshake.",
            )
            return redirect(reverse("dashboard") + "#drafts")
        status = 400
    else:
        form = CaptureForm()
        drafts = DraftFormSet(prefix="drafts")
    context = {
        "form": form,
        "drafts": drafts,
        "collaborators": gather_selectors.collaborators_for(user=request.user),
        "has_key": gather_selectors.model_key_for_gather(user=request.user) is not None,
        "model_keys_url": model_keys_path(),
    }
    return render(request, "gather/capture.html", context, status=status)
