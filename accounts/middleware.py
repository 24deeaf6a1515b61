from django.utils import timezone

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
