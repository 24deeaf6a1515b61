from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render, resolve_url
from django.urls import reverse
from django.utils import timezone

from accounts.mfa import (
    session_signed_in_with_mfa_provider,
    session_used_second_factor,
    user_has_second_factor,
)
from accounts.timezones import user_zone


class UserTimezoneMiddleware:
    """Render times in the signed-in user's own time zone (`accounts.timezones`)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            timezone.activate(user_zone(user))
        else:
            timezone.deactivate()
        return self.get_response(request)


SESSION_ENDED = "Your session has ended: sign in again."


class SessionEndedMiddleware:
    """Tell a person sent to sign in that their session has ended, when it has.

    A signed-in page redirects anyone not signed in to the sign-in page. When
    the request came with a session cookie whose session is gone (expired on
    the server, ended by a password change or a sign-out elsewhere, removed),
    the person was signed in and did nothing to stop being so: the sign-in page
    says why they are there (a message, which outlives the redirect; the
    session middleware drops the dead cookie on this same response). Without
    such a cookie (never signed in, signed out, or a cookie the browser itself
    let expire) nothing is known, and the page says only where sign-in
    continues to (accounts.views.LoginView).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # Judged as the request arrives, so a sign-out (which ends the session
        # on its way to the sign-in page) is not taken for one that had ended.
        ended = self._session_ended(request)
        response = self.get_response(request)
        if (
            ended
            and response.status_code == 302
            and urlsplit(response.get("Location", "")).path == resolve_url(settings.LOGIN_URL)
        ):
            messages.info(request, SESSION_ENDED)
        return response

    @staticmethod
    def _session_ended(request: HttpRequest) -> bool:
        if not request.COOKIES.get(settings.SESSION_COOKIE_NAME):
            return False  # none (or one the session middleware emptied to delete it)
        user = getattr(request, "user", None)
        if user is None or user.is_authenticated:
            return False
        # Looking the user up read the session (UserTimezoneMiddleware already
        # has): a key that named no live session, or a session flushed because
        # its password hash no longer matches, leaves no key.
        return request.session.session_key is None


class AdminRequiresSecondFactorMiddleware:
    """Django admin opens for staff only in a session signed in with a second
    factor, when ADMIN_REQUIRES_MFA is on (the default in production):
    otherwise a page says why and what to do (a 403, never a stack trace).
    Having a factor is not enough: the session must have used it (at sign-in
    or a re-authentication), so a session signed in before it was set up
    signs in again. A sign-in with an SSO provider the operator marked as
    enforcing a second factor of its own counts as one. People who are not
    staff meet the admin's own sign-in."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = request.user
        if settings.ADMIN_REQUIRES_MFA and user.is_authenticated and self._guarded(request):
            has_factor = user_has_second_factor(user)
            if not (
                (has_factor and session_used_second_factor(request))
                or session_signed_in_with_mfa_provider(request)
            ):
                return render(
                    request,
                    "accounts/admin_second_factor_required.html",
                    {"has_factor": has_factor},
                    status=403,
                )
        return self.get_response(request)

    @staticmethod
    def _guarded(request: HttpRequest) -> bool:
        return request.user.is_staff and request.path.startswith(reverse("admin:index"))


# The pages that show "Sign in with ..." (or "Connect ...") buttons.
SSO_BUTTON_PAGES = frozenset({"account_login", "account_signup", "socialaccount_connections"})


class SsoFormActionMiddleware:
    """A page with SSO buttons lets its forms lead to the providers.

    The button's POST is answered with a redirect to the provider, and the
    browser holds that redirect to the page's CSP `form-action` ('self'
    only): so on those pages the enabled providers' issuer origins are
    added (django-csp's per-response update). Inside CSPMiddleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        if match is not None and match.url_name in SSO_BUTTON_PAGES:
            from accounts.selectors import sso_provider_origins

            origins = sso_provider_origins()
            if origins:
                update = dict(getattr(response, "_csp_update", None) or {})
                update["form-action"] = [*update.get("form-action", []), *origins]
                response._csp_update = update  # type: ignore[attr-defined]
        return response
