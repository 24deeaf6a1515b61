"""POST /api/gather (mounted at /api/ by config.urls)."""

from django.urls import path

from gather import api

urlpatterns = [
    path("gather", api.GatherView.as_view(), name="api-gather"),
]
