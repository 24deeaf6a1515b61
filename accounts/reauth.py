"""How fresh a sign-in must be for sensitive actions (minting an API token).

allauth's `reauthentication_required` asks for the password unless the person
re-authenticated within ACCOUNT_REAUTHENTICATION_TIMEOUT; a sign-in as fresh
counts as well here, so nobody is asked twice in a row.
"""

from __future__ import annotations

import time

from allauth.account.authentication import get_authentication_records
from allauth.account.decorators import reauthentication_required
from django.conf import settings
from django.http import HttpRequest


def signed_in_recently(request: HttpRequest) -> bool:
    """True when the last sign-in or re-authentication in this session is younger
    than ACCOUNT_REAUTHENTICATION_TIMEOUT seconds."""
    records = get_authentication_records(request, request.user)
    if not records:
        return False  # e.g. a session made without allauth's sign-in
    last = max(record.get("at", 0) for record in records)
    return time.time() - last < settings.ACCOUNT_REAUTHENTICATION_TIMEOUT


def recent_sign_in_required(view):
    """Asks for the password again before a POST when the sign-in is not recent.
    GET passes; allauth replays the suspended POST once the password is given."""
    return reauthentication_required(
        view, allow_get=True, enabled=lambda request: not signed_in_recently(request)
    )
