"""Settings, Model keys (mounted at /settings/model-keys/)."""

from django.urls import path

from gather import key_views

urlpatterns = [
    path("", key_views.model_keys, name="model_keys"),
    path("<str:provider>/model", key_views.model_key_model, name="model_key_model"),
    path("<str:provider>/default", key_views.model_key_default, name="model_key_default"),
    path("<str:provider>/delete", key_views.model_key_delete, name="model_key_delete"),
]
