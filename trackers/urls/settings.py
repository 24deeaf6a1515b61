"""Settings, Tracker connections, under /settings/trackers/."""

from django.urls import path

from trackers import views

urlpatterns = [
    path("", views.connection_list, name="tracker_connections"),
    path("<uuid:connection_id>/", views.connection_detail, name="tracker_connection"),
    path("<uuid:connection_id>/rotate", views.connection_rotate, name="tracker_rotate"),
    path(
        "<uuid:connection_id>/tracker-secret",
        views.connection_tracker_secret,
        name="tracker_secret",
    ),
    path("<uuid:connection_id>/site", views.connection_site, name="tracker_site"),
    path("<uuid:connection_id>/delete", views.connection_delete, name="tracker_delete"),
]
