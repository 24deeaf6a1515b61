from django.db import connection
from django.http import Http404, HttpRequest, JsonResponse


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness plus a database round trip, for load balancers and compose."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


def not_yet(request: HttpRequest):
    raise Http404("Not published yet.")
