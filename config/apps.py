from django.apps import AppConfig


class ServiceConfig(AppConfig):
    """The project's own checks (config/checks.py); `config` has no models."""

    name = "config"
    label = "service"
    verbose_name = "Service configuration"

    def ready(self) -> None:
        from config import checks  # noqa: F401 (registers the deployment checks)
