from django.apps import AppConfig


class CommitmentsConfig(AppConfig):
    name = "commitments"
    default_auto_field = "django.db.models.BigAutoField"
