from django.apps import AppConfig


class RatelimitsConfig(AppConfig):
    name = "ratelimits"
    default_auto_field = "django.db.models.BigAutoField"
