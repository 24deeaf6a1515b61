"""python manage.py add_webhook_endpoint EMAIL --system SLUG --url URL

Registers a webhook endpoint for the user with EMAIL and the external system
SLUG, as Settings, Webhooks does (the same service, the same URL checks), and
prints its signing secret as the last line of the output, so scripts can take
it with `tail -n 1`. The secret is printed once and stored only encrypted.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from accounts.commands import active_user_for_command
from audit.services import Actor
from webhooks import services
from webhooks.errors import WebhookError


class Command(BaseCommand):
    help = (
        "Register a webhook endpoint for the user with EMAIL and one external system; "
        "the signing secret is the last line printed."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("email")
        parser.add_argument(
            "--system",
            required=True,
            help="The externalSystem the user's integration sends to the inbox (e.g. jira)",
        )
        parser.add_argument("--url", required=True, help="Where events are POSTed (https://...)")

    def handle(self, *args, email: str, system: str, url: str, **options) -> None:
        user = active_user_for_command(email)
        try:
            endpoint, secret = services.webhook_endpoint_create(
                user=user, external_system=system, url=url, actor=Actor.system()
            )
        except WebhookError as exc:
            raise CommandError(exc.message) from exc
        self.stderr.write(
            f"Registered the {endpoint.external_system} endpoint (id {endpoint.pk}) of "
            f"{user.email}: events go to {endpoint.masked_url}. Store the signing secret now: "
            "it is not shown again."
        )
        self.stdout.write(secret)
