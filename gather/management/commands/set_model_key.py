"""python manage.py set_model_key EMAIL --provider openai|anthropic [--model M]

Stores (or replaces) the user's own model key, as Settings, Model keys
does. The key is read from standard input, never from the command line (which
other users of the machine can see); the newest stored key becomes the
user's default. Prints a confirmation with the key's last four characters.
`set_provider_key` is the same command by its name before the glossary's
"model key" (operators' scripts call it).
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from accounts.commands import active_user_for_command
from audit.services import Actor
from gather import errors, services
from gather.models import Provider


class Command(BaseCommand):
    stealth_options = ("stdin",)  # call_command(..., stdin=io.StringIO(key)) in scripts and tests

    help = (
        "Store the user's own OpenAI or Anthropic key for capture; the key is read from "
        "standard input and becomes the user's default."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("email")
        parser.add_argument("--provider", required=True, help=" or ".join(Provider.values))
        parser.add_argument(
            "--model", default=None, help="The model to call (default: the provider's default)"
        )

    def handle(self, *args, email: str, provider: str, model: str | None, **options) -> None:
        if provider not in Provider.values:
            raise CommandError(
                f"Unknown provider {provider!r}: choose {' or '.join(Provider.values)}."
            )
        user = active_user_for_command(email)
        stdin = options.get("stdin") or sys.stdin
        if stdin.isatty():
            self.stderr.write("Paste the key and press Enter:")
        key = stdin.readline().strip()
        if not key:
            raise CommandError("No key on standard input (the key is read from there).")
        try:
            stored = services.model_key_set(
                user=user, provider=provider, key=key, model=model, actor=Actor.system()
            )
        except errors.ModelKeyError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(
            f"Stored the {stored.get_provider_display()} key …{stored.last4} of {user.email} "
            f"(model {stored.model}); it is their default now."
        )
