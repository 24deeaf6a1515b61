from django.apps import AppConfig


class GatherConfig(AppConfig):
    name = "gather"
    default_auto_field = "django.db.models.BigAutoField"
