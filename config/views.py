from django.conf import settings
from django.db import connection
from django.http import Http404, HttpRequest, JsonResponse
from django.utils.cache import patch_cache_control
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularSwaggerSplitView


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness plus a database round trip, for load balancers and compose."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


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
    template_name_js = "api_reference.js"

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        if request.GET.get("script") is not None:
            response.data["csrf_cookie_name"] = settings.CSRF_COOKIE_NAME
            patch_cache_control(response, private=True, no_store=True)
        return response
