from django.core.management.base import BaseCommand, CommandError

from accounts.commands import active_user_for_command
from accounts.services import user_second_factors_remove


class Command(BaseCommand):
    help = (
        "Remove every second factor (authenticator app, recovery codes) of the person "
        "who signs in with EMAIL, when they lost theirs: they sign in with the password "
        "alone and set up a new one. Recorded on the audit trail with --reason."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("email")
        parser.add_argument(
            "--reason", required=True, help="Why (e.g. the ticket), kept on the audit trail"
        )

    def handle(self, *args, email: str, reason: str, **options) -> None:
        reason = reason.strip()
        if not reason:
            raise CommandError("Say why with --reason (it is kept on the audit trail).")
        user = active_user_for_command(email)
        removed = user_second_factors_remove(user=user, reason=reason)
        if not removed:
            raise CommandError(f"{user.email} has no second factor; nothing was changed.")
        self.stdout.write(
            self.style.SUCCESS(f"Removed the second factor of {user.email}: {', '.join(removed)}")
        )
