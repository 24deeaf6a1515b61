"""/api/v1/hooks/<hook_id>: tracker connections' receiving URLs."""

from django.urls import path

from trackers import api

urlpatterns = [
    path("<str:hook_id>", api.HookView.as_view(), name="tracker-hook"),
]
