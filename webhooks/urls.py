"""Settings, Webhooks (mounted at /settings/webhooks/)."""

from django.urls import path

from webhooks import views

urlpatterns = [
    path("", views.webhook_list, name="webhooks"),
    path("docs.md", views.webhook_docs, name="webhook_docs"),
    path("<uuid:endpoint_id>/edit", views.webhook_edit, name="webhook_edit"),
    path("<uuid:endpoint_id>/events", views.webhook_events, name="webhook_events"),
    path("<uuid:endpoint_id>/pause", views.webhook_pause, name="webhook_pause"),
    path("<uuid:endpoint_id>/resume", views.webhook_resume, name="webhook_resume"),
    path("<uuid:endpoint_id>/delete", views.webhook_delete, name="webhook_delete"),
    path("<uuid:endpoint_id>/test", views.webhook_test, name="webhook_test"),
    path("<uuid:endpoint_id>/rotate", views.webhook_rotate, name="webhook_rotate"),
    path("deliveries/<uuid:delivery_id>/replay", views.webhook_replay, name="webhook_replay"),
    path(
        "deliveries/<uuid:delivery_id>/status",
        views.webhook_delivery_status,
        name="webhook_delivery_status",
    ),
]
