"""Settings, Model keys (mounted at /settings/model-keys/)."""

from django.urls import path

from gather.views import keys

urlpatterns = [
    path("", keys.model_keys, name="model_keys"),
    path("<str:provider>/model", keys.model_key_model, name="model_key_model"),
    path("<str:provider>/default", keys.model_key_default, name="model_key_default"),
    path("<str:provider>/delete", keys.model_key_delete, name="model_key_delete"),
]
