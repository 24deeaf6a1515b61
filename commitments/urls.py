from django.urls import path

from commitments import views, views_accord, views_dashboard

urlpatterns = [
    path("", views_accord.accord, name="accord"),
    path("accord/fragment", views_accord.accord_fragment, name="accord_fragment"),
    path("commitments/new", views_accord.commitment_new, name="commitment_new"),
    path("dashboard/", views_dashboard.dashboard, name="dashboard"),
    path("dashboard/day/<str:day>/", views_dashboard.dashboard_day, name="dashboard_day"),
    # Nudges link to /commitments/<id> without a trailing slash; both forms work.
    path("commitments/<uuid:commitment_id>", views.commitment_detail, name="commitment_detail"),
    path("commitments/<uuid:commitment_id>/", views.commitment_detail),
    path(
        "commitments/<uuid:commitment_id>/terms",
        views.commitment_change_terms,
        name="commitment_change_terms",
    ),
    *(
        path(
            f"commitments/<uuid:commitment_id>/{action}",
            views.commitment_act,
            {"action": action},
            name=f"commitment_{action}",
        )
        for action in views.HANDSHAKE_ACTIONS
    ),
]
# Decline and complete ask to confirm first (commitments.views.commitment_confirm).
urlpatterns += [
    path(
        f"commitments/<uuid:commitment_id>/{action}/confirm",
        views.commitment_confirm,
        {"action": action},
        name=f"commitment_{action}_confirm",
    )
    for action in views.CONFIRMED_MOVES
]
