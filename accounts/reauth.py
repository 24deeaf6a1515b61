"""How fresh a sign-in must be for sensitive pages (API tokens, webhooks,
Model keys), and how it is asked for without parking a secret.

The password is asked for before the form is shown: a GET of a guarded page
after an old sign-in goes to allauth's re-authentication page and comes back
to the form once the password is given. A POST that arrives stale anyway (the
form was left open past the limit) is refused: nothing is done and nothing of
the request is kept; the person is told so, sent to give the password, and
brought back to the empty form.

allauth's own `reauthentication_required` is not used for this: on a POST it
suspends the whole request (POST and META, the session cookie included) into
the session to replay it after the password, which would store a provider
key, a webhook URL or a token request in the session table for as long as
the session lives.

A sign-in as fresh as a re-authentication counts (nobody is asked twice in a
row); so does allauth's own record of a recent re-authentication.
"""

from __future__ import annotations

import time
from functools import wraps

from allauth.account.adapter import get_adapter
from allauth.account.authentication import get_authentication_records
from allauth.account.internal.flows.reauthentication import is_reauthentication_required
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import urlencode

STALE_POST_MESSAGE = (
    "Your sign-in is too old for this form, so nothing was saved and nothing you "
    "typed was kept. Enter your password, then fill in the form again."
)


def signed_in_recently(request: HttpRequest) -> bool:
    """True when the last sign-in or re-authentication in this session is younger
    than ACCOUNT_REAUTHENTICATION_TIMEOUT seconds."""
    records = get_authentication_records(request, request.user)
    if not records:
        return False  # e.g. a session made without allauth's sign-in
    last = max(record.get("at", 0) for record in records)
    return time.time() - last < settings.ACCOUNT_REAUTHENTICATION_TIMEOUT


def reauthentication_due(request: HttpRequest) -> bool:
    """True when a guarded page must ask for the password first."""
    if not request.user.is_authenticated:
        return True
    return not signed_in_recently(request) and is_reauthentication_required(request, app="")


def _reauthenticate_then(request: HttpRequest, back_to: str) -> HttpResponseRedirect:
    methods = get_adapter().get_reauthentication_methods(request.user)
    url = methods[0]["url"] if methods else reverse("account_login")
    return HttpResponseRedirect(f"{url}?{urlencode({REDIRECT_FIELD_NAME: back_to})}")


def recent_sign_in_required(view):
    """Asks for the password again, on the GET, when the sign-in is not recent;
    refuses a stale POST (or any other method) without keeping any of it."""

    @wraps(view)
    def guarded(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not reauthentication_due(request):
            return view(request, *args, **kwargs)
        if request.method in ("GET", "HEAD"):
            return _reauthenticate_then(request, request.get_full_path())
        # Stale POST: refused, never suspended. Back to the form (its path,
        # not the query or body of this request) after the password.
        messages.error(request, STALE_POST_MESSAGE)
        return _reauthenticate_then(request, request.path)

    return guarded
