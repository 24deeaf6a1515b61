from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiJsonRenderer2
from drf_spectacular.views import (
    SpectacularJSONAPIView,
    SpectacularYAMLAPIView,
)

from config import views

# The admin has no sign-in of its own: its login page sends a visitor to
# allauth's, with allauth's rate limits (no second, unlimited door); a signed-in
# staff member passes, anyone else signed in is refused.
admin.site.login = secure_admin_login(admin.site.login)  # type: ignore[method-assign]  # as above

urlpatterns = [
    path("admin/", admin.site.urls),
    # accounts' versions of some allauth pages first (no unverified primary address).
    path("accounts/", include("accounts.urls.auth")),
    path("accounts/", include("allauth.urls")),
    path("api/v1/hooks/", include("trackers.urls.api")),
    path("api/v1/", include("integrations.urls.api")),
    path("api/", include("gather.urls.api")),
    # Plain application/json first, so browsers and curl get it by default.
    path(
        "api-reference/openapi.json",
        SpectacularJSONAPIView.as_view(
            renderer_classes=[OpenApiJsonRenderer2, OpenApiJsonRenderer]
        ),
        name="openapi-json",
    ),
    path("api-reference/openapi.yaml", SpectacularYAMLAPIView.as_view(), name="openapi-yaml"),
    # Swagger UI under the Content-Security-Policy (no inline script or
    # style): the split view serves its start-up script from
    # /api-reference?script=, and our template links a stylesheet instead of
    # drf-spectacular's inline <style>. Its script sends the CSRF header, so
    # Try it out works for the session route POST /api/gather.
    path(
        "api-reference",
        views.ApiReferenceView.as_view(url_name="openapi-json"),
        name="api-reference",
    ),
    # Reserved for version 2 of the API; 404 until it exists.
    re_path(r"^api-reference/v2(?:/.*)?$", views.not_yet),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    # accounts serves /settings/ and /settings/profile/; integrations the tokens.
    path("settings/", include("accounts.urls.settings")),
    path("settings/", include("integrations.urls.settings")),
    path("settings/notifications/", include("notifications.urls")),
    path("settings/webhooks/", include("webhooks.urls")),
    path("settings/trackers/", include("trackers.urls.settings")),
    path("settings/model-keys/", include("gather.urls.settings")),
    path("settings/links/", include("commitments.urls.settings")),
    path("capture/", include("gather.urls.pages")),
    path("", include("commitments.urls.pages")),
]
