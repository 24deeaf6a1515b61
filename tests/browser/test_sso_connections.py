"""The sign-in providers connected to an account (allauth's connections page,
/accounts/3rdparty/), reached from Settings, Security, in the site's design,
at phone and desktop size, axe clean."""

from __future__ import annotations

from allauth.socialaccount.models import SocialAccount

from accounts.models import SsoProvider


def test_the_connections_page_is_linked_from_security_and_clean(
    page, sign_in, make_user, check_page
):
    SsoProvider.objects.create(
        name="Acme SSO", slug="acme-sso", issuer="https://id.acme.example",
        client_id="commitments", client_secret="secret",
    )  # fmt: skip
    person = make_user("ada@example.com", display_name="Ada")
    SocialAccount.objects.create(user=person, provider="acme-sso", uid="sub-ada")
    sign_in(page, person)

    page.goto("/settings/security/")
    assert "You also sign in with Acme SSO." in page.content()
    page.get_by_role("link", name="Connect or remove sign-in providers").click()
    page.wait_for_url("**/accounts/3rdparty/")
    assert page.get_by_role("heading", name="Sign-in providers").is_visible()
    assert page.get_by_role("radio", name="Acme SSO").is_visible()
    assert page.get_by_role("button", name="Connect Acme SSO").is_visible()
    check_page(page, "sso-connections")

    # With a password of their own, the person may remove the connection.
    page.get_by_role("radio", name="Acme SSO").check()
    page.get_by_role("button", name="Remove the one chosen").click()
    page.wait_for_url("**/accounts/3rdparty/")
    assert not SocialAccount.objects.filter(user=person).exists()
    assert page.get_by_text("No sign-in provider is connected to this account.").is_visible()
