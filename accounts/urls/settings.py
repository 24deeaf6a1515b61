"""/settings/ (the index), /settings/profile/ and /settings/security/.

Mounted at "settings/" before integrations' settings pages, so it serves only
these three paths and never shadows "tokens/" or "notifications/".
"""

from django.urls import path

from accounts import views

app_name = "accounts"

urlpatterns = [
    path("", views.settings_index, name="settings"),
    path("profile/", views.profile_update, name="profile"),
    path("security/", views.security, name="security"),
]
