"""Settings pages of the integrations app, under /settings/."""

from django.urls import include, path

urlpatterns = [
    path("tokens/", include("integrations.web.token_urls")),
]
