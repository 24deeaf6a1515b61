"""python manage.py add_sso_provider --name NAME --issuer URL --client-id ID
[--domain DOMAIN ...] [--trusted-for-domain-addresses] [--provider-enforces-mfa]

Registers an OpenID Connect provider people may sign in with ("Sign in with
NAME" on the sign-in page). The client secret is read from standard input,
never from the command line (which other users of the machine can see), and
stored encrypted. The last line printed is the redirect URI to register at the
provider. The rules the options take part in: docs/security.md, "Single
sign-on".
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from accounts import services
from accounts.sso import redirect_uri
from audit.services import Actor


class Command(BaseCommand):
    stealth_options = ("stdin",)  # call_command(..., stdin=io.StringIO(secret)) in tests

    help = (
        "Register an OpenID Connect provider for sign-in; the client secret is read from "
        "standard input. Prints the redirect URI to register at the provider."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--name", required=True, help='Shown as "Sign in with NAME"')
        parser.add_argument("--issuer", required=True, help="The provider's issuer URL")
        parser.add_argument("--client-id", required=True)
        parser.add_argument(
            "--domain",
            action="append",
            default=[],
            dest="domains",
            help="A domain whose people must sign in with this provider (repeatable)",
        )
        parser.add_argument(
            "--trusted-for-domain-addresses",
            action="store_true",
            help=(
                "Let a verified address of one of those domains reach (and link) the "
                "existing account with that address"
            ),
        )
        parser.add_argument(
            "--provider-enforces-mfa",
            action="store_true",
            dest="enforces_mfa",
            help=(
                "The provider asks everyone for a second factor: a sign-in with it counts as "
                "one for staff opening the admin"
            ),
        )

    def handle(
        self,
        *args,
        name: str,
        issuer: str,
        client_id: str,
        domains: list[str],
        trusted_for_domain_addresses: bool,
        enforces_mfa: bool = False,
        **options,
    ) -> None:
        stdin = options.get("stdin") or sys.stdin
        if stdin.isatty():
            self.stderr.write("Paste the client secret and press Enter:")
        secret = stdin.readline().strip()
        if not secret:
            raise CommandError("No client secret on standard input (it is read from there).")
        try:
            provider = services.sso_provider_add(
                name=name,
                issuer=issuer,
                client_id=client_id,
                client_secret=secret,
                domains=domains,
                trusted_for_domain_addresses=trusted_for_domain_addresses,
                enforces_mfa=enforces_mfa,
                actor=Actor.system(),
            )
        except services.SsoProviderError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f'Added "{provider.name}" (issuer {provider.issuer}).')
        if provider.domains:
            self.stdout.write(f"People at {', '.join(provider.domains)} must sign in with it.")
        if provider.enforces_mfa:
            self.stdout.write("A sign-in with it counts as a second factor for the admin.")
        self.stdout.write("Register this redirect URI at the provider:")
        self.stdout.write(redirect_uri(provider))
