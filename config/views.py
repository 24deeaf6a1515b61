from django.conf import settings
from django.http import Http404, HttpRequest, JsonResponse
from django.utils.cache import patch_cache_control
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework.authentication import SessionAuthentication

from config import health


def _no_store(response: JsonResponse) -> JsonResponse:
    patch_cache_control(response, no_store=True)
    return response


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process serves requests. Touches no database and no
    Redis, so an outage there does not get the process restarted."""
    return _no_store(JsonResponse({"status": "ok"}))


def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: the database, Redis, and a live consumer on every queue the
    service routes tasks to (config/health.py); 200 when all hold, else 503
    naming what does not. A 503 is logged as one WARNING line naming what is
    missing, not by django.request (an ERROR per probe, every few seconds, for
    as long as a worker or Redis is away)."""
    result = health.readiness()
    response = _no_store(JsonResponse(result.as_json(), status=200 if result.ready else 503))
    if not result.ready:
        result.log_not_ready()
        response._has_been_logged = True  # django.utils.log.log_response then stays quiet
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
