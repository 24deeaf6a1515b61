from django.http import HttpRequest, JsonResponse
from django.urls import path

from benchmarks.bare.views import FloorView


def healthz(request: HttpRequest) -> JsonResponse:
    """What the benchmark's start-up wait asks (benchmarks.harness.wait_for_http)."""
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("api/v1/bench/floor", FloorView.as_view()),
    path("healthz", healthz),
]
