"""The second factor in a real browser, at phone and desktop size: an
authenticator app set up with a real code (its recovery codes shown once),
new recovery codes made, and a sign-in that asks for the app's code after the
password."""

from __future__ import annotations

import time

import pyotp
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import TOTP

from accounts.recovery_codes import make_codes, use_code

PASSWORD = "correct horse battery"  # make_user's


def code_now(secret: str) -> str:
    """The app's code, taken early enough in its 30-s step to be checked
    within it: the service accepts the current step's code only
    (allauth's MFA_TOTP_TOLERANCE, 0), and a slow page must not see the step
    turn."""
    app = pyotp.TOTP(secret)
    left = app.interval - time.time() % app.interval
    if left < 10:
        time.sleep(left + 0.1)
    return app.now()


def test_setting_up_an_authenticator_app(page, sign_in, make_user, check_page):
    person = make_user("ada@example.com", display_name="Ada")
    sign_in(page, person)
    page.goto("/settings/security/")
    check_page(page, "security-no-factor")

    page.get_by_role("link", name="Set up an authenticator app").click()
    secret = page.locator("#authenticator_secret").input_value()
    check_page(page, "totp-activate")
    page.get_by_label("Authenticator code").fill(code_now(secret))
    page.get_by_role("button", name="Activate").click()

    page.wait_for_url("**/accounts/2fa/recovery-codes/")
    assert Authenticator.objects.filter(user_id=person.pk, type=Authenticator.Type.TOTP).exists()
    # The codes are on the page, this once; only their hashes are kept.
    codes = page.locator("#recovery-codes code").all_inner_texts()
    assert len(codes) == 10
    check_page(page, "recovery-codes-shown")
    row = Authenticator.objects.get(user_id=person.pk, type=Authenticator.Type.RECOVERY_CODES)
    assert use_code(row, codes[9])  # a code shown is a working one

    page.reload()
    assert not any(code in page.content() for code in codes)
    assert "9 of 10 unused" in page.content()
    check_page(page, "recovery-codes-counted")

    page.goto("/settings/security/")
    assert "9 unused" in page.content()
    assert not any(code in page.content() for code in codes)
    check_page(page, "security-with-factor")


def test_signing_in_asks_for_the_code_after_the_password(page, make_user, check_page):
    person = make_user("ada@example.com", display_name="Ada")
    secret = pyotp.random_base32()
    TOTP.activate(person, secret)
    make_codes(person)

    page.goto("/accounts/login/")
    page.get_by_label("Email").fill(person.email)
    page.locator("#id_password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()

    page.wait_for_url("**/accounts/2fa/authenticate/")
    check_page(page, "second-factor-asked")
    page.get_by_label("Code").fill(code_now(secret))
    page.get_by_role("button", name="Sign In").click()

    # Signed in: on the Accord (the code's page ends with "/" too, so a
    # wait on that alone could end before the code was taken).
    page.wait_for_url(f"{page.live_url}/")
    page.goto("/settings/security/")
    assert page.url.endswith("/settings/security/")
    assert "Authenticator app" in page.content()


def test_making_new_recovery_codes(page, sign_in, make_user, check_page):
    person = make_user("ada@example.com", display_name="Ada")
    TOTP.activate(person, pyotp.random_base32())
    old = make_codes(person)
    sign_in(page, person)

    page.goto("/settings/security/")
    page.get_by_role("link", name="Make new codes").click()
    page.wait_for_url("**/accounts/2fa/recovery-codes/generate/")
    assert "Your 10 unused codes will stop working" in page.content()
    check_page(page, "recovery-codes-make")
    page.get_by_role("button", name="Make new codes").click()

    page.wait_for_url("**/accounts/2fa/recovery-codes/")
    codes = page.locator("#recovery-codes code").all_inner_texts()
    assert len(codes) == 10 and not set(codes) & set(old)
    row = Authenticator.objects.get(user_id=person.pk, type=Authenticator.Type.RECOVERY_CODES)
    assert not use_code(row, old[0]) and use_code(row, codes[0])
    page.get_by_role("link", name="I have saved them").click()
    page.wait_for_url("**/settings/security/")
    assert not any(code in page.content() for code in codes)


def test_the_admin_says_why_it_refuses_staff_without_a_factor(
    page, sign_in, make_user, check_page, settings
):
    settings.ADMIN_REQUIRES_MFA = True  # production's default
    staff = make_user("staff@example.com", is_staff=True, is_superuser=True)
    sign_in(page, staff)

    response = page.goto("/admin/")
    assert response.status == 403
    assert page.get_by_role("heading", name="The admin needs a second factor").is_visible()
    check_page(page, "admin-needs-second-factor")
    page.get_by_role("link", name="Settings, Security").click()
    assert page.url.endswith("/settings/security/")
