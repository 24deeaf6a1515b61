"""Settings, Notifications."""

from django.urls import path

from notifications import views

urlpatterns = [
    path("", views.notification_settings, name="notification_settings"),
    path("test", views.notification_test, name="notification_test"),
]
