"""/settings/ (the index) and /settings/profile/.

Mounted at "settings/" before integrations' settings pages, so it serves only
these two paths and never shadows "tokens/" or "notifications/".
"""

from django.urls import path

from accounts import views

app_name = "accounts"

urlpatterns = [
    path("", views.settings_index, name="settings"),
    path("profile/", views.profile_update, name="profile"),
]
