"""Staff open Django admin only in a session signed in with a second factor,
when ADMIN_REQUIRES_MFA is on (production's default): otherwise a page says
why, never a stack trace."""

from __future__ import annotations

import pyotp
import pytest
from allauth.mfa.totp.internal.auth import TOTP

from tests.harness.api import PASSWORD
from tests.harness.settings import REAL_KEY, settings_for

pytestmark = pytest.mark.django_db

ADMIN = "/admin/"


@pytest.fixture
def admin_requires_mfa(settings):
    settings.ADMIN_REQUIRES_MFA = True


def give_totp(user) -> pyotp.TOTP:
    secret = pyotp.random_base32()
    TOTP.activate(user, secret)
    return pyotp.TOTP(secret)


def sign_in_with_code(client, user, app: pyotp.TOTP) -> None:
    response = client.post("/accounts/login/", {"login": user.email, "password": PASSWORD})
    assert response["Location"] == "/accounts/2fa/authenticate/"
    assert client.post("/accounts/2fa/authenticate/", {"code": app.now()}).status_code == 302


def test_it_is_on_in_production_and_off_in_development_by_default(tmp_path):
    assert settings_for(tmp_path, DEBUG="0", SECRET_KEY=REAL_KEY)["ADMIN_REQUIRES_MFA"] is True
    assert settings_for(tmp_path, DEBUG="1")["ADMIN_REQUIRES_MFA"] is False
    off = settings_for(tmp_path, DEBUG="0", SECRET_KEY=REAL_KEY, ADMIN_REQUIRES_MFA="0")
    assert off["ADMIN_REQUIRES_MFA"] is False


def test_staff_without_a_factor_are_told_to_set_one_up(client, staff, admin_requires_mfa):
    client.post("/accounts/login/", {"login": staff.email, "password": PASSWORD})

    for path in (ADMIN, "/admin/accounts/user/"):
        response = client.get(path)
        assert response.status_code == 403
        page = response.content.decode()
        assert "The admin needs a second factor" in page
        assert "/settings/security/" in page


def test_staff_signed_in_with_their_factor_open_the_admin(client, staff, admin_requires_mfa):
    sign_in_with_code(client, staff, give_totp(staff))

    assert client.get(ADMIN).status_code == 200
    assert client.get("/admin/accounts/user/").status_code == 200


def test_a_session_signed_in_before_the_factor_was_set_up_signs_in_again(
    client, staff, admin_requires_mfa
):
    client.post("/accounts/login/", {"login": staff.email, "password": PASSWORD})
    give_totp(staff)

    response = client.get(ADMIN)
    assert response.status_code == 403
    assert "sign in again" in response.content.decode()


def test_with_the_setting_off_staff_open_the_admin_without_one(client, staff, settings):
    settings.ADMIN_REQUIRES_MFA = False
    client.post("/accounts/login/", {"login": staff.email, "password": PASSWORD})

    assert client.get(ADMIN).status_code == 200


def test_people_who_are_not_staff_meet_the_admins_sign_in(client, assigner, admin_requires_mfa):
    client.post("/accounts/login/", {"login": assigner.email, "password": PASSWORD})

    response = client.get(ADMIN)
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_a_superuser_deletes_a_lost_factor_in_the_admin_and_it_is_audited(client, staff, assigner):
    from allauth.mfa.models import Authenticator

    from audit.models import AuditAction, AuditEvent

    give_totp(assigner)
    factor = Authenticator.objects.get(user_id=assigner.pk)
    client.force_login(staff)
    page = client.get(f"/admin/mfa/authenticator/{factor.pk}/change/")
    assert page.status_code == 200
    assert factor.data["secret"] not in page.content.decode()  # not even encrypted

    response = client.post(f"/admin/mfa/authenticator/{factor.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not Authenticator.objects.filter(pk=factor.pk).exists()
    event = AuditEvent.objects.get(action=AuditAction.ADMIN_DELETED)
    assert event.payload["object"]["model"] == "mfa.authenticator"
