from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiJsonRenderer2
from drf_spectacular.views import (
    SpectacularJSONAPIView,
    SpectacularSwaggerView,
    SpectacularYAMLAPIView,
)

from config import views

urlpatterns = [
    path("admin/", admin.site.urls),
    # accounts' versions of some allauth pages first (no unverified primary address).
    path("accounts/", include("accounts.auth_urls")),
    path("accounts/", include("allauth.urls")),
    path("api/v1/", include("integrations.api_urls")),
    path("api/", include("gather.urls")),
    # Plain application/json first, so browsers and curl get it by default.
    path(
        "api-reference/openapi.json",
        SpectacularJSONAPIView.as_view(
            renderer_classes=[OpenApiJsonRenderer2, OpenApiJsonRenderer]
        ),
        name="openapi-json",
    ),
    path("api-reference/openapi.yaml", SpectacularYAMLAPIView.as_view(), name="openapi-yaml"),
    path(
        "api-reference",
        SpectacularSwaggerView.as_view(url_name="openapi-json"),
        name="api-reference",
    ),
    # Reserved for version 2 of the API; 404 until it exists.
    re_path(r"^api-reference/v2(?:/.*)?$", views.not_yet),
    path("healthz", views.healthz, name="healthz"),
    # accounts serves /settings/ and /settings/profile/; integrations the tokens.
    path("settings/", include("accounts.urls")),
    path("settings/", include("integrations.urls")),
    path("settings/notifications/", include("notifications.urls")),
    path("capture/", include("gather.page_urls")),
    path("", include("commitments.urls")),
]
