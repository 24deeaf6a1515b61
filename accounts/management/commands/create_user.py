from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction

from accounts.models import User
from accounts.services import user_email_mark_verified


def _reasons(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "; ".join(
            f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items()
        )
    return " ".join(exc.messages)


class Command(BaseCommand):
    help = (
        "Create a user who signs in with EMAIL and PASSWORD. The address counts as "
        "verified: the operator vouches for it."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("email")
        parser.add_argument("--password", required=True)
        parser.add_argument("--name", default="", help="Display name")
        parser.add_argument("--staff", action="store_true", help="May use Django admin")
        parser.add_argument("--superuser", action="store_true", help="Has every permission")

    def handle(
        self, *args, email: str, password: str, name: str, staff: bool, superuser: bool, **options
    ) -> None:
        email = email.strip().lower()
        try:
            validate_email(email)
        except ValidationError as exc:
            raise CommandError(f"{email!r} is not a valid e-mail address.") from exc
        if User.objects.filter(email__iexact=email).exists():
            raise CommandError(f"A user with the e-mail {email} already exists.")
        # The same rules as sign-up: an operator's account is no weaker.
        try:
            validate_password(password, User(email=email, display_name=name))
        except ValidationError as exc:
            raise CommandError(f"That password is refused: {_reasons(exc)}") from exc
        try:
            with transaction.atomic():
                user = User.objects.create_user(
                    email,
                    password,
                    display_name=name,
                    is_staff=staff or superuser,
                    is_superuser=superuser,
                )
                user_email_mark_verified(user=user)
        except ValidationError as exc:
            raise CommandError(f"Could not create the user: {_reasons(exc)}") from exc
        except IntegrityError as exc:  # created by someone else in the meantime
            raise CommandError(f"A user with the e-mail {email} already exists.") from exc
        self.stdout.write(self.style.SUCCESS(f"Created {user.email} ({user.id})"))
