"""The request of a signed-in person, for type hints.

Django types `request.user` as a User or an AnonymousUser; behind
`login_required` (and the admin, for staff) it is a User. Annotate such a
view's request with `AuthenticatedRequest` so the checker knows it; Django
still makes plain HttpRequests (this class is never instantiated).
"""

from __future__ import annotations

from django.http import HttpRequest
from rest_framework.request import Request

from accounts.models import User


class AuthenticatedRequest(HttpRequest):
    user: User


class AuthenticatedApiRequest(Request):
    """The API's request behind IsAuthenticated."""

    user: User
