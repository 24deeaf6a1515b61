from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from accounts import receivers  # noqa: F401  (connects allauth's signals)
        from accounts.mfa import second_factors_reencrypt
        from lib.crypto import EXTRA_REENCRYPTORS

        # reencrypt_secrets rewrites the second factors' secrets too.
        if second_factors_reencrypt not in EXTRA_REENCRYPTORS:
            EXTRA_REENCRYPTORS.append(second_factors_reencrypt)
