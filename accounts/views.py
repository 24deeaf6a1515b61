"""Settings: the index of everything a person configures, and their profile."""

from __future__ import annotations

from functools import wraps
from urllib.parse import urlsplit

from allauth.account import app_settings as allauth_settings
from allauth.account import views as allauth_views
from allauth.account.internal.flows.email_verification import (
    consume_email_verification_rate_limit,
)
from allauth.account.models import EmailAddress
from allauth.mfa.totp import views as allauth_totp_views
from allauth.mfa.webauthn import views as allauth_webauthn_views
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from accounts import recovery_codes
from accounts.forms import MakeRecoveryCodesForm, ProfileForm
from accounts.reauth import recent_sign_in_required
from accounts.requests import AuthenticatedRequest
from accounts.selectors import (
    invitation_sso_hint,
    recovery_codes_left,
    recovery_codes_of,
    second_factors_of,
    sso_connections_of,
    user_has_verified_primary_email,
)
from audit.models import AuditAction
from audit.services import Actor, audit_event_record


def _render_index(request: HttpRequest, form: ProfileForm, status: int = 200) -> HttpResponse:
    return render(request, "accounts/settings.html", {"form": form}, status=status)


@login_required
@require_http_methods(["GET"])
def settings_index(request: HttpRequest) -> HttpResponse:
    return _render_index(request, ProfileForm(instance=request.user))


@login_required
@require_http_methods(["GET", "POST"])
def profile_update(request: AuthenticatedRequest) -> HttpResponse:
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
                action=AuditAction.USER_PROFILE_CHANGED,
                payload={"changes": changes},
            )
    messages.success(request, "Profile saved.")
    return redirect("accounts:settings")


@login_required
@require_http_methods(["GET"])
def security(request: AuthenticatedRequest) -> HttpResponse:
    """Settings, Security: the second factors (where to turn them on or off)
    and the sign-in providers connected to the account."""
    return render(
        request,
        "accounts/security.html",
        {
            "factors": second_factors_of(user=request.user),
            "sso": sso_connections_of(user=request.user),
        },
    )


def second_factor_index(request: HttpRequest) -> HttpResponse:
    """allauth's own pages of factors and of security keys (where its pages
    return to) are Settings, Security."""
    return redirect("accounts:security")


def _then_first_recovery_codes(view):
    """allauth's page that adds an app or a key, followed, when it added the
    person's first, by their first recovery codes (accounts.recovery_codes),
    shown once on the page it goes to."""

    @wraps(view)
    def adding(request: AuthenticatedRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        added = request.method == "POST" and response.status_code == 302
        if added and recovery_codes.needs_first_codes(request.user):
            recovery_codes.make_first_codes(request, request.user)
            return redirect("mfa_view_recovery_codes")
        return response

    return adding


# allauth's pages that turn a factor on or off, behind the service's
# re-authentication (accounts.reauth): the password (or the second factor) is
# asked for on the GET when the sign-in is old, and a stale POST is refused
# rather than parked in the session.
activate_totp = login_required(
    recent_sign_in_required(_then_first_recovery_codes(allauth_totp_views.activate_totp))
)
deactivate_totp = login_required(recent_sign_in_required(allauth_totp_views.deactivate_totp))
add_webauthn = login_required(
    recent_sign_in_required(_then_first_recovery_codes(allauth_webauthn_views.add_webauthn))
)
edit_webauthn = login_required(recent_sign_in_required(allauth_webauthn_views.edit_webauthn))
remove_webauthn = login_required(recent_sign_in_required(allauth_webauthn_views.remove_webauthn))


@login_required
@never_cache
@require_http_methods(["GET"])
def recovery_codes_index(request: AuthenticatedRequest) -> HttpResponse:
    """The recovery codes: right after they are made, the codes themselves,
    this once (nothing else can show them: only their hashes are kept);
    otherwise how many are left, and the way to make new ones."""
    codes = recovery_codes.fresh_codes(request)
    row = recovery_codes_of(user=request.user)
    return render(
        request,
        "accounts/recovery_codes.html",
        {
            "codes": codes if row is not None else None,
            "left": recovery_codes_left(row) if row is not None else None,
            "total": row.data.get("total") if row is not None else None,
            "can_make": recovery_codes.can_make_codes(request.user),
        },
    )


@login_required
@recent_sign_in_required
@require_http_methods(["GET", "POST"])
def generate_recovery_codes(request: AuthenticatedRequest) -> HttpResponse:
    """Make new recovery codes (the old ones stop working), after the
    password again when the sign-in is old; the codes are shown once, on the
    page this goes to."""
    posted = request.method == "POST"
    form = MakeRecoveryCodesForm(request.POST if posted else None, user=request.user)
    if posted:
        if form.is_valid():
            recovery_codes.regenerate(request, request.user)
            return redirect("mfa_view_recovery_codes")
        status = 400
    else:
        status = 200
    row = recovery_codes_of(user=request.user)
    return render(
        request,
        "accounts/recovery_codes_generate.html",
        {
            "form": form,
            "left": recovery_codes_left(row) if row is not None else None,
            "can_make": recovery_codes.can_make_codes(request.user),
        },
        status=status,
    )


class LoginView(allauth_views.LoginView):
    """allauth's sign-in page, saying where signing in continues to when a
    signed-in page sent the person here (`?next=`, Django's login_required).
    Only a path on this site is named, as allauth only follows such a one.
    (That a session has ended is said by accounts.middleware.SessionEndedMiddleware.)"""

    def get_context_data(self, **kwargs) -> dict:
        context = super().get_context_data(**kwargs)
        context["continue_to"] = _local_path(self.request, self.get_next_url())
        return context


def _local_path(request: HttpRequest, url: str | None) -> str | None:
    """`url` as a path of this site, or None if it is not one (or empty)."""
    if not url or not url_has_allowed_host_and_scheme(
        url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return None
    bits = urlsplit(url)
    return bits.path + (f"?{bits.query}" if bits.query else "")


login = LoginView.as_view()


class SignupView(allauth_views.SignupView):
    """allauth's sign-up page. An invitation's link opens it with the invited
    address filled in (`?email=`): when that address's domain must sign in
    with an SSO provider, the page says so first (a password sign-up would be
    refused)."""

    def get_context_data(self, **kwargs) -> dict:
        context = super().get_context_data(**kwargs)
        context["sso_hint"] = invitation_sso_hint(str(self.request.GET.get("email") or ""))
        return context


signup = SignupView.as_view()


class EmailView(allauth_views.EmailView):
    """allauth's e-mail page, except that no unverified address becomes primary.

    allauth lets a person with no verified address make any address they added
    primary; here the primary address (the login, where commitments and nudges
    go) is always one its owner proved by typing the code mailed to it. With
    ACCOUNT_CHANGE_EMAIL a new address replaces the old one only once verified.
    """

    def post(self, request: AuthenticatedRequest, *args, **kwargs) -> HttpResponse:
        if "action_add" in request.POST and not user_has_verified_primary_email(user=request.user):
            # allauth would replace the unverified login address with the new one
            # at once (leaving the account without an address until it is verified).
            messages.error(
                request,
                "Verify your current address first (Re-send verification, then type the "
                "code we send to it), then change it.",
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
                    "Only a verified address can be your primary address: verify it first "
                    "(Re-send verification, then type the code we send to it).",
                )
                return redirect("account_email")
        return super().post(request, *args, **kwargs)


email = login_required(EmailView.as_view())


class EmailVerificationCodeView(allauth_views.ConfirmEmailVerificationCodeView):
    """Where the code mailed to an address is typed: allauth's page (the code
    and the address it proves live in this browser's session only, so only the
    session that asked can finish), saying for which account, and answering a
    new code asked for too soon with a sentence instead of allauth's bare 429."""

    def get_context_data(self, **kwargs) -> dict:
        context = super().get_context_data(**kwargs)
        # A person signed in is adding an address to their account; otherwise
        # the code finishes the sign-up (or sign-in) pending in this session.
        context["adding_to"] = self.request.user if self.request.user.is_authenticated else None
        context["code_minutes"] = allauth_settings.EMAIL_VERIFICATION_BY_CODE_TIMEOUT // 60
        return context

    def form_valid(self, form) -> HttpResponse:
        if self._action == "resend" and not consume_email_verification_rate_limit(
            self.request, self._process.email, dry_run=True
        ):
            messages.warning(
                self.request,
                "A code was sent to that address a moment ago: look for it (and in your "
                "spam folder), or ask again in a few seconds.",
            )
            return redirect("account_email_verification_sent")
        return super().form_valid(form)


email_verification_code = EmailVerificationCodeView.as_view()
