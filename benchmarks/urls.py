"""The production URLconf plus the in-stack floor (benchmarks/views.py), under
/api/v1/ so that it passes the token API's middleware, as the inbox does."""

from django.urls import path

from benchmarks.views import FloorView
from config.urls import urlpatterns as production_urlpatterns

urlpatterns = [path("api/v1/bench/floor", FloorView.as_view()), *production_urlpatterns]
