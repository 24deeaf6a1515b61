"""Settings, Notifications."""

from django.urls import path

from notifications import views

urlpatterns = [
    path("", views.notification_settings, name="notification_settings"),
    path("test", views.test_nudge, name="test_nudge"),
    path("test/<uuid:test_id>", views.test_nudge_status, name="test_nudge_status"),
]
