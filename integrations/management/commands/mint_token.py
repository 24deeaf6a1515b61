"""python manage.py mint_token EMAIL --name NAME [--expires YYYY-MM-DD]
    [--scope inbox|sync|read ...] [--network CIDR ...]

Mints an API token for the user with EMAIL and prints its plaintext as the
last line of the output, so scripts can take it with `tail -n 1`. The
plaintext is printed once and stored nowhere. With --expires the token is
refused once that day (in the user's time zone) is over. --scope (repeatable;
default all three) limits what it may call, --network (repeatable, CIDR or one
address, IPv4 or IPv6; default any) where it may call from.
"""

from __future__ import annotations

import datetime as dt

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.commands import active_user_for_command
from audit.services import Actor
from integrations import services
from integrations.models import SCOPES


class Command(BaseCommand):
    help = "Mint an API token for the user with EMAIL; the plaintext is the last line printed."

    def add_arguments(self, parser) -> None:
        parser.add_argument("email")
        parser.add_argument("--name", required=True, help="What the token is for")
        parser.add_argument(
            "--expires",
            type=dt.date.fromisoformat,
            default=None,
            metavar="YYYY-MM-DD",
            help="The token works through this day (the user's time zone), then is refused",
        )
        parser.add_argument(
            "--scope",
            action="append",
            choices=SCOPES,
            dest="scopes",
            help="What the token may call; repeat for more (default: all of them)",
        )
        parser.add_argument(
            "--network",
            action="append",
            dest="networks",
            metavar="CIDR",
            help="A client network (or address) it is accepted from; repeat for more "
            "(default: any address)",
        )

    def handle(
        self,
        *args,
        email: str,
        name: str,
        expires: dt.date | None = None,
        scopes: list[str] | None = None,
        networks: list[str] | None = None,
        **options,
    ) -> None:
        user = active_user_for_command(email, why_active="its tokens would be refused")
        try:
            minted = services.api_token_mint(
                user=user,
                name=name,
                actor=Actor.system(),
                expires_at=services.expiry_at_end_of(expires, user.timezone) if expires else None,
                scopes=scopes,
                networks=networks or (),
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        token = minted.token
        self.stderr.write(
            f"Minted token “{token.name}” ({token.prefix}…, id {token.id}) for {user.email}"
            + (f", expiring {token.expires_at.isoformat()}" if token.expires_at else "")
            + (f", scopes {' '.join(token.scopes)}" if scopes else "")
            + (f", from {' '.join(token.networks)}" if token.networks else "")
            + ". Store it now: it is not shown again."
        )
        self.stdout.write(minted.plaintext)
