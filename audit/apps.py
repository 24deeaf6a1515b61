from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Sign-ins, passwords and e-mail addresses: Django's and allauth's
        # signals are the only hook they offer.
        from audit import receivers

        receivers.connect()
