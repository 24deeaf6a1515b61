"""manage.py add_sso_provider --name N --issuer URL --client-id ID [--domain D ...]
with the client secret on standard input."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from accounts.models import SsoProvider
from audit.models import AuditAction, AuditEvent

pytestmark = pytest.mark.django_db

SECRET = "s3cret-client-value"


def add(*args: str, stdin: str = SECRET + "\n") -> str:
    out = StringIO()
    call_command("add_sso_provider", *args, stdin=StringIO(stdin), stdout=out)
    return out.getvalue()


def test_it_stores_the_provider_and_prints_the_redirect_uri_last(settings):
    settings.SITE_URL = "https://commitments.example"

    output = add(
        "--name",
        "Acme SSO",
        "--issuer",
        "https://id.acme.example/",
        "--client-id",
        "abc",
        "--domain",
        "Acme.Example",
        "--domain",
        "acme.example",
        "--domain",
        "corp.example",
    )

    provider = SsoProvider.objects.get()
    assert provider.name == "Acme SSO" and provider.slug == "acme-sso"
    assert provider.issuer == "https://id.acme.example" and provider.client_id == "abc"
    assert provider.client_secret == SECRET
    assert provider.domains == ["acme.example", "corp.example"]
    assert provider.enabled and not provider.trusted_for_domain_addresses
    last_line = [line for line in output.splitlines() if line.strip()][-1]
    assert last_line == "https://commitments.example/accounts/oidc/acme-sso/login/callback/"


def test_the_secret_is_stored_encrypted():
    add("--name", "Acme SSO", "--issuer", "https://id.acme.example", "--client-id", "abc")

    with connection.cursor() as cursor:
        cursor.execute("select client_secret from accounts_ssoprovider")
        (stored,) = cursor.fetchone()
    assert SECRET not in stored and stored.startswith("gAAAA")


def test_it_is_audited_without_the_secret():
    add(
        "--name",
        "Acme SSO",
        "--issuer",
        "https://id.acme.example",
        "--client-id",
        "abc",
        "--trusted-for-domain-addresses",
        "--domain",
        "acme.example",
    )

    event = AuditEvent.objects.get(action=AuditAction.SSO_PROVIDER_ADDED)
    assert event.payload["name"] == "Acme SSO"
    assert event.payload["trustedForDomainAddresses"] is True
    assert SECRET not in str(event.payload)


def test_an_empty_standard_input_is_refused_and_stores_nothing():
    with pytest.raises(CommandError, match="No client secret"):
        add(
            "--name",
            "Acme SSO",
            "--issuer",
            "https://id.acme.example",
            "--client-id",
            "x",
            stdin="",
        )
    assert not SsoProvider.objects.exists()


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--issuer", "not a url"], "issuer"),
        (["--issuer", "https://id.acme.example", "--domain", "not_a domain"], "Not a domain"),
    ],
)
def test_bad_input_is_refused_and_stores_nothing(args, reason):
    with pytest.raises(CommandError, match=reason):
        add("--name", "Acme SSO", "--client-id", "x", *args)
    assert not SsoProvider.objects.exists()
    assert not AuditEvent.objects.filter(action=AuditAction.SSO_PROVIDER_ADDED).exists()


def test_a_second_provider_with_the_same_name_is_refused():
    add("--name", "Acme SSO", "--issuer", "https://id.acme.example", "--client-id", "x")
    with pytest.raises(CommandError, match="already exists"):
        add("--name", "Acme SSO", "--issuer", "https://other.example", "--client-id", "y")
    assert SsoProvider.objects.count() == 1
