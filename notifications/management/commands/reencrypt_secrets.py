"""python manage.py reencrypt_secrets

Rotating FIELD_ENCRYPTION_KEYS: put the new key first (old keys after it),
deploy, run this command, then drop the old keys. It rewrites every secret
stored under an older key (chat URLs now; webhook secrets and provider keys
later) and fails if any value can be read by no key, naming the row.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from lib.crypto import reencrypt_all


class Command(BaseCommand):
    help = "Re-encrypt every stored secret under the first of FIELD_ENCRYPTION_KEYS."

    def handle(self, *args, **options) -> None:
        report = reencrypt_all()
        self.stdout.write(
            f"Re-encrypted {report.rewritten} secret(s) under the newest key; "
            f"{report.current} already were."
        )
        if report.unreadable:
            raise CommandError(
                f"{len(report.unreadable)} secret(s) could be decrypted with none of "
                "FIELD_ENCRYPTION_KEYS (was a key dropped too early?): "
                + ", ".join(report.unreadable)
            )
