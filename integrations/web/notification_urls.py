"""Settings, Notifications."""

from django.urls import path

from integrations.web import notification_views

urlpatterns = [
    path("", notification_views.notification_settings, name="notification_settings"),
    path("test", notification_views.notification_test, name="notification_test"),
]
