"""Settings, API Tokens, under /settings/tokens/ (mounted at "settings/" after accounts)."""

from django.urls import path

from integrations import views

urlpatterns = [
    path("tokens/", views.token_list, name="api_tokens"),
    path("tokens/<uuid:token_id>/revoke", views.token_revoke, name="api_token_revoke"),
]
