from django.apps import AppConfig


class CommitmentsConfig(AppConfig):
    name = "commitments"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from commitments import receivers  # noqa: F401  (accounts' email_verified)
