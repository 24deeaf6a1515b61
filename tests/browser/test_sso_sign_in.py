"""Sign-in with an organisation's identity provider in a real browser: the
button on the sign-in page, the provider's own page (oidc-provider-mock, a
real OpenID Connect provider on loopback), and back, signed in on the Accord;
a person of the provider's domain refused at the password form."""

from __future__ import annotations

from io import StringIO
from urllib.parse import quote

import httpx
import oidc_provider_mock
import pytest
from django.core.management import call_command


@pytest.fixture
def acme_issuer():
    with oidc_provider_mock.run_server_in_thread(require_nonce=True) as server:
        issuer = f"http://localhost:{server.server_port}"
        call_command(
            "add_sso_provider",
            "--name", "Acme SSO", "--issuer", issuer, "--client-id", "commitments",
            "--domain", "acme.example",
            stdin=StringIO("client-secret\n"), stdout=StringIO(),
        )  # fmt: skip
        yield issuer


def test_a_new_person_signs_in_with_the_provider_and_lands_on_the_accord(
    page, acme_issuer, check_page
):
    claims = {"email": "new@acme.example", "email_verified": True, "name": "New Person"}
    assert httpx.put(f"{acme_issuer}/users/{quote('sub-new')}", json=claims).status_code == 204

    page.goto("/accounts/login/")
    check_page(page, "sign-in-with-sso")
    page.get_by_role("button", name="Sign in with Acme SSO").click()
    # The provider's own page: who signs in there.
    page.locator("input[name=sub]").fill("sub-new")
    page.get_by_role("button", name="Authorize").click()

    page.wait_for_url(f"{page.live_url}/")
    assert "New Person" in page.locator("header").inner_text()


def test_a_person_of_the_providers_domain_is_refused_at_the_password_form(
    page, acme_issuer, make_user
):
    make_user("member@acme.example")

    page.goto("/accounts/login/")
    page.get_by_label("Email").fill("member@acme.example")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Sign in", exact=True).click()

    page.get_by_text("People at acme.example sign in with Acme SSO").wait_for()
    assert page.url.startswith(f"{page.live_url}/accounts/login/")
