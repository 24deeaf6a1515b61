"""Sign-in with an OpenID Connect provider, against a real provider on
loopback (oidc-provider-mock, served in a thread): the redirects go through
it and allauth talks to its token, userinfo and discovery endpoints over
HTTP. Each address rule of docs/security.md, "Single sign-on", is tried."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from io import StringIO
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import oidc_provider_mock
import pytest
from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from accounts.models import SsoProvider
from audit.models import AuditAction, AuditEvent
from audit.services import Actor
from commitments import services as commitments_services
from commitments.models import Invitation

pytestmark = pytest.mark.django_db

User = get_user_model()
PASSWORD = "correct horse battery"  # make_user's


# The test's own calls to the provider (plain HTTP on loopback) go through one
# client: httpx.put and httpx.post make a client a call, and each loads the
# system's certificates (20 to 80 ms of CPU) for a TLS it never uses.
_to_provider: list[httpx.Client] = []


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with (
        oidc_provider_mock.run_server_in_thread(require_nonce=True) as server,
        httpx.Client() as client,
    ):
        _to_provider[:] = [client]
        yield f"http://localhost:{server.server_port}"
        _to_provider.clear()


def provider_claims(issuer: str, sub: str, **claims) -> None:
    (client,) = _to_provider
    response = client.put(f"{issuer}/users/{quote(sub)}", json=claims)
    assert response.status_code == 204


@pytest.fixture
def acme(issuer) -> SsoProvider:
    call_command(
        "add_sso_provider",
        "--name", "Acme SSO", "--issuer", issuer, "--client-id", "commitments",
        "--domain", "acme.example",
        stdin=StringIO("client-secret\n"), stdout=StringIO(),
    )  # fmt: skip
    return SsoProvider.objects.get()


def start(client: Client, provider: SsoProvider) -> str:
    """Press "Sign in with ...": the provider's authorization URL."""
    response = client.post(f"/accounts/oidc/{provider.slug}/login/")
    assert response.status_code == 302, response.content[:500]
    return response["Location"]


def authorize(authorization_url: str, sub: str) -> str:
    """The person signs in at the provider: the callback URL it sends them to (path and query)."""
    (client,) = _to_provider
    response = client.post(authorization_url, data={"sub": sub})
    assert response.status_code == 302, response.text[:500]
    bits = urlsplit(response.headers["location"])
    return f"{bits.path}?{bits.query}"


def sso_sign_in(client: Client, provider: SsoProvider, sub: str):
    return client.get(authorize(start(client, provider), sub))


def signed_in_user(client: Client):
    user = client.get("/settings/").wsgi_request.user
    return user if user.is_authenticated else None


def test_the_sign_in_page_offers_the_provider(client, acme):
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with Acme SSO" in page
    assert f'action="/accounts/oidc/{acme.slug}/login/?process=login"' in page


def test_the_sign_in_page_asks_the_same_queries_for_one_provider_or_many(
    client, acme, issuer, django_assert_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as one:
        assert client.get("/accounts/login/").status_code == 200
    for n in range(3):
        SsoProvider.objects.create(
            name=f"Other {n}", slug=f"other-{n}", issuer=f"https://id{n}.example",
            client_id="x", client_secret="y",
        )  # fmt: skip

    # The providers' list (the buttons) and their origins (the CSP): one query each.
    with django_assert_num_queries(len(one.captured_queries)):
        page = client.get("/accounts/login/").content.decode()
    # Each provider's button, beside "Sign in with a passkey".
    assert page.count("Sign in with ") - page.count("Sign in with a passkey") == 4
    assert len(one.captured_queries) <= 4


def test_the_sign_in_pages_csp_lets_the_button_lead_to_the_provider(client, acme, issuer):
    csp = client.get("/accounts/login/")["Content-Security-Policy"]
    form_action = next(d for d in csp.split(";") if d.strip().startswith("form-action"))
    assert issuer in form_action.split()

    acme.enabled = False
    acme.save()
    assert issuer not in client.get("/accounts/login/")["Content-Security-Policy"]


def test_the_authorization_request_carries_pkce_state_and_nonce(client, acme):
    query = parse_qs(urlsplit(start(client, acme)).query)
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0]
    assert query["state"][0] and query["nonce"][0]
    assert query["response_type"] == ["code"]


def test_a_new_person_with_a_verified_address_is_signed_in_on_the_accord(
    client, acme, issuer, make_user, django_capture_on_commit_callbacks
):
    assigner = make_user("boss@example.com")
    waiting = commitments_services.commitment_ask(
        actor=Actor.for_user(assigner),
        assignee_email="new@acme.example",
        description="Water the shrubbery",
        deadline=None,
        send=True,
    )
    provider_claims(
        issuer, "sub-new", email="new@acme.example", email_verified=True, name="New Person"
    )

    with django_capture_on_commit_callbacks(execute=True):
        response = sso_sign_in(client, acme, "sub-new")

    assert response.status_code == 302 and response["Location"] == "/"
    user = User.objects.get(email="new@acme.example")
    assert signed_in_user(client) == user
    assert user.display_name == "New Person" and not user.has_usable_password()
    assert EmailAddress.objects.get(user=user).verified
    assert SocialAccount.objects.get(user=user).uid == "sub-new"
    # What waited for the address reached the person.
    waiting.refresh_from_db()
    assert waiting.assignee == user
    assert Invitation.objects.get().claimed_by == user
    event = AuditEvent.objects.get(action=AuditAction.USER_SIGNED_IN_WITH_SSO)
    assert event.payload["provider"] == acme.slug


def test_a_returning_person_is_signed_in_to_the_same_account(client, acme, issuer):
    provider_claims(issuer, "sub-back", email="back@acme.example", email_verified=True)
    sso_sign_in(client, acme, "sub-back")
    user = User.objects.get(email="back@acme.example")
    client.post("/accounts/logout/")
    assert signed_in_user(client) is None

    response = sso_sign_in(client, acme, "sub-back")

    assert response.status_code == 302 and signed_in_user(client) == user
    assert User.objects.filter(email="back@acme.example").count() == 1


def test_an_unverified_address_is_verified_by_our_own_mail_first(client, acme, issuer, mailbox):
    provider_claims(issuer, "sub-unv", email="unv@acme.example", email_verified=False)

    response = sso_sign_in(client, acme, "sub-unv")

    assert signed_in_user(client) is None
    assert "/accounts/confirm-email/" in response["Location"]
    assert not EmailAddress.objects.get(email="unv@acme.example").verified
    assert [m.to for m in mailbox] == [["unv@acme.example"]]


@pytest.mark.parametrize("email_verified", [True, False])
def test_an_untrusted_provider_gets_no_access_to_an_existing_account(
    client, acme, issuer, make_user, email_verified
):
    owner = make_user("owner@acme.example")
    provider_claims(issuer, "sub-x", email="owner@acme.example", email_verified=email_verified)

    response = sso_sign_in(client, acme, "sub-x")

    assert response.status_code == 401
    assert "An account with this address exists" in response.content.decode()
    assert signed_in_user(client) is None
    assert not SocialAccount.objects.exists()
    owner.refresh_from_db()
    assert owner.has_usable_password()


def test_a_trusted_provider_reaches_the_existing_account_only_with_a_verified_address(
    client, acme, issuer, make_user
):
    acme.trusted_for_domain_addresses = True
    acme.save()
    owner = make_user("owner@acme.example")

    provider_claims(issuer, "sub-u", email="owner@acme.example", email_verified=False)
    sso_sign_in(client, acme, "sub-u")
    assert signed_in_user(client) is None
    assert not SocialAccount.objects.exists()

    provider_claims(issuer, "sub-v", email="owner@acme.example", email_verified=True)
    response = sso_sign_in(client, acme, "sub-v")
    assert response.status_code == 302 and signed_in_user(client) == owner
    assert SocialAccount.objects.get().user == owner


def test_a_trusted_provider_gets_no_access_outside_its_domains(client, acme, issuer, make_user):
    acme.trusted_for_domain_addresses = True
    acme.save()
    make_user("owner@elsewhere.example")
    provider_claims(issuer, "sub-e", email="owner@elsewhere.example", email_verified=True)

    sso_sign_in(client, acme, "sub-e")

    assert signed_in_user(client) is None
    assert not SocialAccount.objects.exists()


def test_a_wrong_state_is_refused(client, acme, issuer):
    provider_claims(issuer, "sub-s", email="s@acme.example", email_verified=True)
    callback = authorize(start(client, acme), "sub-s")
    path, _, query = callback.partition("?")
    params = {k: v[0] for k, v in parse_qs(query).items()}
    params["state"] = "not-the-state"

    response = client.get(path, params)

    assert response.status_code == 401 and signed_in_user(client) is None
    assert not User.objects.filter(email="s@acme.example").exists()


def test_a_wrong_nonce_is_refused(client, acme, issuer):
    provider_claims(issuer, "sub-n", email="n@acme.example", email_verified=True)
    callback = authorize(start(client, acme), "sub-n")
    # The nonce this browser's sign-in expects is not the one the provider put
    # in its ID token (a token made for another sign-in, replayed).
    session = client.session
    for state, _, _ in session["socialaccount_states"].values():
        state["nonce"] = "another-sign-in"
    session.save()

    response = client.get(callback)

    assert response.status_code == 401 and signed_in_user(client) is None
    assert not User.objects.filter(email="n@acme.example").exists()


def test_a_disabled_provider_refuses_at_once(client, acme, issuer):
    provider_claims(issuer, "sub-d", email="d@acme.example", email_verified=True)
    callback = authorize(start(client, acme), "sub-d")
    acme.enabled = False
    acme.save()

    response = client.get(callback)

    assert response.status_code == 404 and signed_in_user(client) is None
    assert not User.objects.filter(email="d@acme.example").exists()
    assert client.post(f"/accounts/oidc/{acme.slug}/login/").status_code == 404
    assert "Sign in with Acme SSO" not in client.get("/accounts/login/").content.decode()


def test_password_sign_in_and_sign_up_are_refused_for_the_providers_domain(client, acme, make_user):
    make_user("member@acme.example")

    response = client.post(
        "/accounts/login/", {"login": "member@acme.example", "password": PASSWORD}
    )
    assert response.status_code == 200 and signed_in_user(client) is None
    assert "People at acme.example sign in with Acme SSO" in response.content.decode()

    response = client.post(
        "/accounts/signup/",
        {
            "email": "another@acme.example",
            "password1": PASSWORD,
            "password2": PASSWORD,
            "timezone": "UTC",
        },
    )
    assert response.status_code == 200
    assert "sign in with Acme SSO" in response.content.decode()
    assert not User.objects.filter(email="another@acme.example").exists()


def test_a_person_who_proves_the_account_links_it_and_then_signs_in_with_the_provider(
    client, acme, issuer, make_user
):
    # Signed in to the account (with its password), the person connects the
    # provider from their own session: the proof the provider's claim lacks.
    owner = make_user("owner@elsewhere.example")
    assert client.login(username="owner@elsewhere.example", password=PASSWORD)
    provider_claims(issuer, "sub-own", email="owner@elsewhere.example", email_verified=False)
    response = client.post(f"/accounts/oidc/{acme.slug}/login/?process=connect")
    client.get(authorize(response["Location"], "sub-own"))
    assert SocialAccount.objects.get().user == owner
    client.post("/accounts/logout/")
    assert signed_in_user(client) is None

    response = sso_sign_in(client, acme, "sub-own")

    assert response.status_code == 302 and signed_in_user(client) == owner


def test_the_connections_page_lists_the_provider(client, acme, make_user):
    client.force_login(make_user("someone@elsewhere.example"))

    page = client.get("/accounts/3rdparty/")

    assert page.status_code == 200
    assert "Connect Acme SSO" in page.content.decode()


def test_a_linked_person_may_reauthenticate_by_signing_in_again_with_the_provider(
    client, acme, issuer, make_user, settings
):
    from tests.harness.api import age_the_sign_in

    make_user("re@elsewhere.example")
    assert client.login(username="re@elsewhere.example", password=PASSWORD)
    provider_claims(issuer, "sub-re", email="re@elsewhere.example", email_verified=True)
    response = client.post(f"/accounts/oidc/{acme.slug}/login/?process=connect")
    client.get(authorize(response["Location"], "sub-re"))
    sso_sign_in(client, acme, "sub-re")
    age_the_sign_in(client, settings.ACCOUNT_REAUTHENTICATION_TIMEOUT + 1)
    asked = client.get("/settings/tokens/")
    assert asked.status_code == 302 and asked["Location"].startswith("/accounts/reauthenticate/")

    page = client.get(asked["Location"]).content.decode()
    assert "Sign in again with Acme SSO" in page
    href = re.search(r'action="(/accounts/oidc/[^"]+)"', page)
    assert href is not None
    response = client.post(html.unescape(href.group(1)))
    back = client.get(authorize(response["Location"], "sub-re"))

    assert back.status_code == 302 and back["Location"] == "/settings/tokens/"
    assert client.get("/settings/tokens/").status_code == 200


@pytest.mark.parametrize("enforces_mfa", [False, True])
def test_staff_signed_in_by_sso_open_the_admin_only_through_a_provider_that_enforces_mfa(
    client, acme, issuer, settings, enforces_mfa
):
    settings.ADMIN_REQUIRES_MFA = True  # production's default
    acme.enforces_mfa = enforces_mfa
    acme.save()
    provider_claims(issuer, "sub-staff", email="staff@acme.example", email_verified=True)
    sso_sign_in(client, acme, "sub-staff")
    User.objects.filter(email="staff@acme.example").update(is_staff=True, is_superuser=True)

    response = client.get("/admin/")

    assert response.status_code == (200 if enforces_mfa else 403)
    event = AuditEvent.objects.get(action=AuditAction.USER_SIGNED_IN_WITH_SSO)
    assert event.payload["method"] == "sso"
    assert event.payload["provider"] == acme.slug
    assert event.payload["second_factor"] is None


def test_a_disabled_provider_that_enforced_mfa_no_longer_opens_the_admin(
    client, acme, issuer, settings
):
    settings.ADMIN_REQUIRES_MFA = True
    acme.enforces_mfa = True
    acme.save()
    provider_claims(issuer, "sub-staff2", email="staff2@acme.example", email_verified=True)
    sso_sign_in(client, acme, "sub-staff2")
    User.objects.filter(email="staff2@acme.example").update(is_staff=True, is_superuser=True)
    assert client.get("/admin/").status_code == 200

    SsoProvider.objects.filter(pk=acme.pk).update(enabled=False)

    assert client.get("/admin/").status_code == 403


def test_add_sso_provider_marks_a_provider_that_enforces_mfa(issuer):
    out = StringIO()
    call_command(
        "add_sso_provider",
        "--name", "Okta", "--issuer", issuer, "--client-id", "c", "--provider-enforces-mfa",
        stdin=StringIO("s\n"), stdout=out,
    )  # fmt: skip
    provider = SsoProvider.objects.get(name="Okta")
    assert provider.enforces_mfa is True
    assert "counts as a second factor" in out.getvalue()
    assert out.getvalue().strip().splitlines()[-1].endswith("/accounts/oidc/okta/login/callback/")
    event = AuditEvent.objects.get(action=AuditAction.SSO_PROVIDER_ADDED)
    assert event.payload["enforcesMfa"] is True


def test_an_invitation_to_a_providers_domain_opens_a_page_that_says_to_sign_in_with_it(
    client, acme
):
    # The invitation's link: the sign-up page with the invited address filled in.
    page = client.get("/accounts/signup/?" + "email=new%40acme.example").content.decode()

    assert html.unescape(page).count("People at acme.example sign in with Acme SSO") == 1
    assert "Sign in with Acme SSO" in page
    elsewhere = client.get("/accounts/signup/?email=new%40elsewhere.example").content.decode()
    assert "People at" not in elsewhere


def test_the_invitation_hint_names_the_provider_only_for_its_domains(acme):
    from accounts.selectors import invitation_sso_hint

    hint = invitation_sso_hint("Pat@ACME.example")
    assert hint is not None and "Sign in with Acme SSO" in hint
    assert invitation_sso_hint("pat@elsewhere.example") is None
    SsoProvider.objects.filter(pk=acme.pk).update(enabled=False)
    assert invitation_sso_hint("pat@acme.example") is None
