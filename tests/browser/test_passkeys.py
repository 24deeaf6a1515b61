"""Security keys and passkeys (WebAuthn) in a real browser, at phone and
desktop size: Chromium's virtual authenticator (the DevTools protocol's
WebAuthn domain) stands in for the key, so the page's own script, the
browser's WebAuthn and the server's checks (challenge, origin, relying party,
signature) all run. The live server is http://localhost, a secure context."""

from __future__ import annotations

from urllib.parse import urlsplit

from allauth.mfa.models import Authenticator

from audit.models import AuditAction, AuditEvent

PASSWORD = "correct horse battery"  # make_user's


def on_the_accord(url: str) -> bool:
    return urlsplit(url).path == "/"


def virtual_authenticator(page) -> str:
    """A platform authenticator that holds passkeys and verifies its user
    (a PIN or a fingerprint, always given), answering at once."""
    cdp = page.context.new_cdp_session(page.page)
    cdp.send("WebAuthn.enable")
    added = cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    page._cdp = cdp  # kept alive with the page
    return added["authenticatorId"]


def add_a_key(page, check_page, *, passkey: bool) -> None:
    page.goto("/settings/security/")
    page.get_by_role("link", name="Add a security key or passkey").click()
    page.wait_for_url("**/accounts/2fa/webauthn/add/")
    check_page(page, "webauthn-add")
    page.get_by_label("Name").fill("Laptop" if passkey else "Desk key")
    if passkey:
        page.get_by_label("Passwordless").check()
    page.get_by_role("button", name="Add").click()
    # The first factor comes with recovery codes, shown once.
    page.wait_for_url("**/accounts/2fa/recovery-codes/")


def test_adding_a_passkey_then_signing_in_with_it_alone(page, sign_in, make_user, check_page):
    person = make_user("ada@example.com", display_name="Ada")
    virtual_authenticator(page)
    sign_in(page, person)

    add_a_key(page, check_page, passkey=True)
    key = Authenticator.objects.get(user_id=person.pk, type=Authenticator.Type.WEBAUTHN)
    assert key.data["name"] == "Laptop"
    assert key.wrap().is_passwordless is True
    added = AuditEvent.objects.filter(
        subject_id=person.pk, action=AuditAction.USER_SECOND_FACTOR_ADDED
    ).values_list("payload__factor", flat=True)
    assert set(added) == {"webauthn", "recovery_codes"}

    page.goto("/settings/security/")
    table = page.locator(
        "section", has=page.get_by_role("heading", name="Security keys and passkeys")
    )
    assert "Laptop" in table.inner_text()
    assert "Passkey: signs in alone" in table.inner_text()
    check_page(page, "security-with-passkey")

    page.get_by_role("button", name="Sign out").click()
    page.goto("/accounts/login/")
    check_page(page, "sign-in-with-passkey-offered")
    page.get_by_role("button", name="Sign in with a passkey").click()
    page.wait_for_url(on_the_accord)
    page.goto("/settings/security/")
    assert page.url.endswith("/settings/security/")

    signed_in = AuditEvent.objects.filter(
        subject_id=person.pk, action=AuditAction.USER_SIGNED_IN
    ).latest("occurred_at")
    assert signed_in.payload["method"] == "passkey"
    key.refresh_from_db()
    assert key.last_used_at is not None


def test_a_security_key_is_asked_for_after_the_password(page, sign_in, make_user, check_page):
    person = make_user("ada@example.com", display_name="Ada")
    virtual_authenticator(page)
    sign_in(page, person)
    add_a_key(page, check_page, passkey=False)
    key = Authenticator.objects.get(user_id=person.pk, type=Authenticator.Type.WEBAUTHN)
    # Not made a passkey (the browser does not say more about such a key).
    assert not key.wrap().is_passwordless
    page.get_by_role("button", name="Sign out").click()

    page.goto("/accounts/login/")
    page.get_by_label("Email").fill(person.email)
    page.locator("#id_password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("**/accounts/2fa/authenticate/")
    check_page(page, "second-factor-asked-key")
    page.get_by_role("button", name="Use a security key").click()
    page.wait_for_url(on_the_accord)

    signed_in = AuditEvent.objects.filter(
        subject_id=person.pk, action=AuditAction.USER_SIGNED_IN
    ).latest("occurred_at")
    assert signed_in.payload["method"] == "password"
    assert signed_in.payload["second_factor"] == "webauthn"


def test_removing_a_key_is_confirmed_and_audited(page, sign_in, make_user, check_page):
    person = make_user("ada@example.com", display_name="Ada")
    virtual_authenticator(page)
    sign_in(page, person)
    add_a_key(page, check_page, passkey=False)

    page.goto("/settings/security/")
    page.get_by_role("link", name="Remove Desk key").click()
    check_page(page, "webauthn-remove")
    page.get_by_role("button", name="Remove").click()
    page.wait_for_url("**/settings/security/")

    assert not Authenticator.objects.filter(user_id=person.pk).exists()
    removed = AuditEvent.objects.filter(
        subject_id=person.pk, action=AuditAction.USER_SECOND_FACTOR_REMOVED
    ).values_list("payload__factor", flat=True)
    assert "webauthn" in set(removed)
    assert "No security key or passkey." in page.content()
