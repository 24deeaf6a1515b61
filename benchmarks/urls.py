"""The production URLconf plus the framework floor (benchmarks/views.py)."""

from django.urls import path

from benchmarks.views import FloorView
from config.urls import urlpatterns as production_urlpatterns

urlpatterns = [path("api/bench/floor", FloorView.as_view()), *production_urlpatterns]
