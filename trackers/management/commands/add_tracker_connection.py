"""python manage.py add_tracker_connection EMAIL --kind github|gitlab|linear|jira
--system SLUG [--site HOST] [--map LOGIN=EMAIL ...]

Adds a tracker connection for the user with EMAIL, as Settings, Tracker
connections does (the same service and rules), and prints its receiving URL
(absolute, under SITE_URL) on one line and its secret as the last line, so
scripts can take them with `head -n 1` and `tail -n 1`. The secret is printed
once and stored only encrypted. Bad input: an error, exit status 1, nothing
written.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from accounts.commands import active_user_for_command
from audit.services import Actor
from trackers import services
from trackers.kinds import Kind


class Command(BaseCommand):
    help = (
        "Add a tracker connection for the user with EMAIL; prints the receiving URL, "
        "then the secret as the last line."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("email")
        parser.add_argument("--kind", required=True, choices=Kind.values)
        parser.add_argument(
            "--system",
            help="The externalSystem its commitments carry (default: the kind)",
        )
        parser.add_argument(
            "--site",
            help=(
                "The tracker's host, whose https issue links are used (default: github.com, "
                "linear.app; GitLab and Jira: the host of the first delivery)"
            ),
        )
        parser.add_argument(
            "--map",
            action="append",
            default=[],
            metavar="LOGIN=EMAIL",
            help=(
                "The tracker's user (GitHub login, GitLab username, Linear user id, Jira "
                "accountId) and the e-mail address here it stands for (repeatable)"
            ),
        )

    def handle(
        self, *args, email: str, kind: str, system: str | None, site: str | None, map, **options
    ) -> None:
        user = active_user_for_command(email)
        try:
            identity_map = services.parse_identity_lines(map)
            connection, secret = services.tracker_connection_add(
                owner=user,
                kind=kind,
                system=system,
                identity_map=identity_map,
                site=site,
                actor=Actor.system(),
            )
        except services.TrackerError as exc:
            raise CommandError(exc.message) from exc
        url = settings.SITE_URL + reverse("tracker-hook", args=[connection.hook_id])
        self.stderr.write(
            f"Added the {connection.label} of {user.email} "
            f"({len(connection.identity_map)} mapped names). Paste the URL and the secret "
            "into the tracker's webhook settings; the secret is not shown again."
        )
        self.stdout.write(url)
        self.stdout.write(secret)
