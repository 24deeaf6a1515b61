"""The public API: /api/v1/..."""

from django.urls import path

from integrations import api

urlpatterns = [
    path("inbox", api.InboxView.as_view(), name="api-inbox"),
    path("sync", api.SyncView.as_view(), name="api-sync"),
    path("commitments", api.CommitmentListView.as_view(), name="api-commitments"),
    path(
        "commitments/<str:id>",
        api.CommitmentDetailView.as_view(),
        name="api-commitment",
    ),
]
