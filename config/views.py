from django.conf import settings
from django.http import Http404, HttpRequest, JsonResponse
from django.utils.cache import patch_cache_control
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework.authentication import SessionAuthentication

from config import health
from lib.client_address import client_ip
from lib.outbound import is_loopback_address


def _no_store(response: JsonResponse) -> JsonResponse:
    patch_cache_control(response, no_store=True)
    return response


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process serves requests. Touches no database and no
    Redis, so an outage there does not get the process restarted."""
    return _no_store(JsonResponse({"status": "ok"}))


# Headers a proxy adds: a request carrying one came through a proxy, even when
# the proxy runs on this machine (its peer address is then loopback).
FORWARDING_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


def may_see_readiness_details(request: HttpRequest) -> bool:
    """Staff, or a probe on this machine (the client loopback as
    lib.client_address decides, and not relayed by a proxy): the checks name
    the queues, count live workers and give operator commands, which are for
    operators, not for anyone on the internet."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and user.is_staff:
        return True
    address = client_ip(request)
    relayed = any(header in request.META for header in FORWARDING_HEADERS)
    return address is not None and is_loopback_address(address) and not relayed


def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: the database, Redis, and a live consumer on every queue the
    service routes tasks to (config/health.py); 200 when all hold, else 503.
    The checks, naming what does not hold, go to staff and to a probe on this
    machine (may_see_readiness_details); anyone else reads the status alone
    (the status code says the same). A 503 is logged as one WARNING line
    naming what is missing, not by django.request (an ERROR per probe, every
    few seconds, for as long as a worker or Redis is away)."""
    result = health.readiness()
    body = result.as_json()
    if not may_see_readiness_details(request):
        body = {"status": body["status"]}
    response = _no_store(JsonResponse(body, status=200 if result.ready else 503))
    if not result.ready:
        result.log_not_ready()
        # django.utils.log.log_response then stays quiet (a private flag of Django's).
        response._has_been_logged = True  # type: ignore[attr-defined]
    return response


def not_yet(request: HttpRequest):
    raise Http404("Not published yet.")


class ApiReferenceView(SpectacularSwaggerSplitView):
    """Swagger UI (/api-reference) under the Content-Security-Policy: the page
    links its start-up script (/api-reference?script=), which is ours
    (templates/api_reference.js) so that Try it out sends the CSRF header to
    the session route, POST /api/gather. The script holds the visitor's CSRF
    token (its fallback when the cookie cannot be read): private, never stored
    by a browser or a proxy."""

    template_name = "api_reference.html"
    # The page is inside the app's frame, which names who is signed in.
    authentication_classes = [SessionAuthentication]
    template_name_js = "api_reference.js"

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        if request.GET.get("script") is not None:
            response.data["csrf_cookie_name"] = settings.CSRF_COOKIE_NAME
            patch_cache_control(response, private=True, no_store=True)
        return response
