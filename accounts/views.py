"""Settings: the index of everything a person configures, and their profile."""

from __future__ import annotations

from allauth.account import views as allauth_views
from allauth.account.models import EmailAddress
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.forms import ProfileForm
from accounts.selectors import user_has_verified_primary_email
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


class EmailView(allauth_views.EmailView):
    """allauth's e-mail page, except that no unverified address becomes primary.

    allauth lets a person with no verified address make any address they added
    primary; here the primary address (the login, where commitments and nudges
    go) is always one its owner proved by following the mailed link. With
    ACCOUNT_CHANGE_EMAIL a new address replaces the old one only once verified.
    """

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if "action_add" in request.POST and not user_has_verified_primary_email(user=request.user):
            # allauth would replace the unverified login address with the new one
            # at once (leaving the account without an address until it is verified).
            messages.error(
                request,
                "Verify your current address first (follow the link we sent to it), "
                "then change it.",
            )
            return redirect("account_email")
        if "action_primary" in request.POST:
            chosen = (request.POST.get("email") or "").strip()
            verified = EmailAddress.objects.filter(
                user=request.user, email__iexact=chosen, verified=True
            ).exists()
            if not verified:
                messages.error(
                    request,
                    "Only a verified address can be your primary address: follow the link "
                    "we sent to it first.",
                )
                return redirect("account_email")
        return super().post(request, *args, **kwargs)


email = login_required(EmailView.as_view())


@require_POST
def verification_resend(request: HttpRequest) -> HttpResponse:
    """ "Send the link again", offered after a sign-up or a sign-in with an
    address not yet verified. Only for the sign-in pending in this browser's
    session (allauth's), so nobody can make the service mail an address they
    merely typed; allauth's `confirm_email` limit (one mail per address per
    ACCOUNT_EMAIL_CONFIRMATION_COOLDOWN) holds."""
    from allauth.account.internal.flows.email_verification import (
        get_address_for_user,
        send_verification_email_to_address,
    )
    from allauth.account.internal.stagekit import unstash_login

    login = None if request.user.is_authenticated else unstash_login(request, peek=True)
    address = get_address_for_user(login.user) if login and login.user else None
    if address is None or address.verified:
        messages.info(request, "Sign in again to get a new link.")
        return redirect("account_login")
    if send_verification_email_to_address(request, address):
        messages.success(request, f"We sent a new link to {address.email}.")
    else:
        messages.warning(
            request,
            "A link was sent to that address a moment ago: look for it (and in your spam "
            "folder), or ask again in a few minutes.",
        )
    return redirect("account_email_verification_sent")
