"""Settings, API Tokens."""

from django.urls import path

from integrations.web import token_views

urlpatterns = [
    path("", token_views.token_list, name="api_tokens"),
    path("<uuid:token_id>/revoke", token_views.token_revoke, name="api_token_revoke"),
]
