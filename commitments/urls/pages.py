from django.urls import path

from commitments.views import accord, answer, commitment, dashboard

urlpatterns = [
    path("", accord.accord, name="accord"),
    path("accord/fragment", accord.accord_fragment, name="accord_fragment"),
    path("commitments/new", accord.commitment_new, name="commitment_new"),
    path("dashboard/", dashboard.dashboard, name="dashboard"),
    path("dashboard/day/<str:day>/", dashboard.dashboard_day, name="dashboard_day"),
    # Nudges link to /commitments/<id> without a trailing slash; both forms work.
    path(
        "commitments/<uuid:commitment_id>", commitment.commitment_detail, name="commitment_detail"
    ),
    path("commitments/<uuid:commitment_id>/", commitment.commitment_detail),
    # The page an answer link of a nudge opens (commitments.answer_links).
    path(
        "commitments/<uuid:commitment_id>/answer/<str:token>/",
        answer.commitment_answer,
        name="commitment_answer",
    ),
    path(
        "commitments/<uuid:commitment_id>/terms",
        commitment.commitment_change_terms,
        name="commitment_change_terms",
    ),
    *(
        path(
            f"commitments/<uuid:commitment_id>/{action}",
            commitment.commitment_act,
            {"action": action},
            name=f"commitment_{action}",
        )
        for action in commitment.HANDSHAKE_ACTIONS
    ),
]
# The conversation around a commitment (issue 26): the moves with a form of
# their own; withdraw is one of HANDSHAKE_ACTIONS above (it asks to confirm).
urlpatterns += [
    path(
        "commitments/<uuid:commitment_id>/propose",
        commitment.commitment_propose,
        name="commitment_propose",
    ),
    path(
        "commitments/<uuid:commitment_id>/more-time",
        commitment.commitment_request_extension,
        name="commitment_request_extension",
    ),
    path(
        "commitments/<uuid:commitment_id>/comment",
        commitment.commitment_comment,
        name="commitment_comment",
    ),
    path(
        "commitments/<uuid:commitment_id>/reassign",
        commitment.commitment_reassign,
        name="commitment_reassign",
    ),
    *(
        path(
            f"commitments/<uuid:commitment_id>/{segment}",
            commitment.commitment_answer_proposal,
            {"action": action},
            name=f"commitment_{action}",
        )
        for action, segment in (
            ("accept_proposal", "proposal/accept"),
            ("decline_proposal", "proposal/decline"),
            ("grant_extension", "more-time/grant"),
            ("decline_extension", "more-time/decline"),
        )
    ),
]
# Decline, complete and withdraw ask to confirm first
# (commitments.views.commitment.commitment_confirm).
urlpatterns += [
    path(
        f"commitments/<uuid:commitment_id>/{action}/confirm",
        commitment.commitment_confirm,
        {"action": action},
        name=f"commitment_{action}_confirm",
    )
    for action in commitment.CONFIRMED_MOVES
]
