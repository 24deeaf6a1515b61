from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    name = "integrations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from integrations import receivers  # noqa: F401  (revokes tokens on credential changes)
