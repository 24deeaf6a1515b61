"""Settings, Notifications."""

from django.urls import path

from notifications import views

urlpatterns = [
    path("", views.notification_settings, name="notification_settings"),
    path("test", views.notification_test, name="notification_test"),
    path("test/<uuid:test_id>", views.notification_test_status, name="notification_test_status"),
]
