"""The second factor (allauth.mfa): an authenticator app set up with a real
code, asked for after the password at sign-in, recovery codes that sign in
once each (their own tests: test_recovery_codes.py), the re-authentication in
front of every change, the secrets encrypted at rest, and each change on the
audit trail."""

from __future__ import annotations

import io
from urllib.parse import quote

import pyotp
import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import TOTP
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.recovery_codes import make_codes, use_code
from audit.models import AuditAction, AuditEvent
from lib.crypto import DecryptionError, decrypt_str
from tests.harness.api import PASSWORD, age_the_sign_in, sign_in

pytestmark = pytest.mark.django_db

ACTIVATE = "/accounts/2fa/totp/activate/"
DEACTIVATE = "/accounts/2fa/totp/deactivate/"
AUTHENTICATE = "/accounts/2fa/authenticate/"
GENERATE = "/accounts/2fa/recovery-codes/generate/"
SECURITY = "/settings/security/"
REAUTHENTICATE = "/accounts/2fa/reauthenticate/"
TOKENS = "/settings/tokens/"


def other_than(code: str) -> str:
    """A six-digit code that is not `code`."""
    return str((int(code) + 1) % 1_000_000).zfill(6)


def give_totp(user) -> tuple[pyotp.TOTP, list[str]]:
    """An authenticator app and recovery codes for `user`, as set up on the page."""
    secret = pyotp.random_base32()
    TOTP.activate(user, secret)
    codes = make_codes(user)
    return pyotp.TOTP(secret), codes


def give_security_key(user, name: str, passkey: bool = True) -> Authenticator:
    """A WebAuthn row as the Security page reads it (its name and whether the
    key said it is a passkey); the credential itself is not parsed there."""
    return Authenticator.objects.create(
        user=user,
        type=Authenticator.Type.WEBAUTHN,
        data={
            "name": name,
            "credential": {"clientExtensionResults": {"credProps": {"rk": passkey}}},
        },
    )


def actions_of(user) -> list[str]:
    return list(
        AuditEvent.objects.filter(subject_id=user.pk)
        .order_by("occurred_at")
        .values_list("action", flat=True)
    )


def password_step(client, user):
    return client.post("/accounts/login/", {"login": user.email, "password": PASSWORD})


# allauth announces a new or removed factor once it is committed (the audit
# row and the notice by mail follow): these tests commit, as a request does.
@pytest.mark.django_db(transaction=True)
def test_setting_up_an_app_takes_a_real_code_and_shows_the_recovery_codes_once(
    client, assigner, mailbox
):
    sign_in(client, assigner)
    page = client.get(ACTIVATE)
    assert page.status_code == 200
    secret = page.context["form"].secret
    app = pyotp.TOTP(secret)

    wrong = client.post(ACTIVATE, {"code": other_than(app.now())})
    assert wrong.status_code == 200
    assert not Authenticator.objects.filter(user_id=assigner.pk).exists()

    done = client.post(ACTIVATE, {"code": app.now()}, follow=True)
    assert done.status_code == 200
    assert done.redirect_chain[-1][0] == "/accounts/2fa/recovery-codes/"
    codes = done.context["codes"]
    assert len(codes) == 10 and all(code.isdigit() for code in codes)
    assert all(code in done.content.decode() for code in codes)
    # Shown once: the page again shows none of them.
    again = client.get(done.redirect_chain[-1][0]).content.decode()
    assert not any(code in again for code in codes)

    totp = Authenticator.objects.get(user_id=assigner.pk, type=Authenticator.Type.TOTP)
    recovery = Authenticator.objects.get(
        user_id=assigner.pk, type=Authenticator.Type.RECOVERY_CODES
    )
    # Encrypted at rest with the field encryption keys, never the plain secret;
    # of the codes, only their keyed hashes.
    assert secret not in str(totp.data)
    assert decrypt_str(totp.data["secret"]) == secret
    assert sorted(recovery.data) == ["hashes", "key", "total"]
    assert len(recovery.data["hashes"]) == 10
    assert not any(code in str(recovery.data) for code in codes)
    assert AuditAction.USER_SECOND_FACTOR_ADDED in actions_of(assigner)
    factors = [
        e.payload["factor"]
        for e in AuditEvent.objects.filter(action=AuditAction.USER_SECOND_FACTOR_ADDED)
    ]
    assert sorted(factors) == ["recovery_codes", "totp"]
    assert [m.to for m in mailbox] == [[assigner.email]]  # told by mail


def test_the_security_page_says_whether_there_is_a_factor(client, assigner):
    sign_in(client, assigner)
    before = client.get(SECURITY).content.decode()
    assert "No second factor" in before and ACTIVATE in before

    give_totp(assigner)
    after = client.get(SECURITY).content.decode()
    assert "Authenticator app" in after and DEACTIVATE in after
    assert "10 unused" in after


def test_sign_in_asks_for_the_code_after_the_password(client, assigner):
    app, _ = give_totp(assigner)

    response = password_step(client, assigner)
    assert response.status_code == 302 and response["Location"] == AUTHENTICATE
    assert client.get(SECURITY).status_code == 302  # not signed in yet

    wrong = client.post(AUTHENTICATE, {"code": other_than(app.now())})
    assert wrong.status_code == 200
    assert client.get(SECURITY).status_code == 302
    failed = AuditEvent.objects.get(action=AuditAction.USER_SECOND_FACTOR_FAILED)
    assert failed.payload["factor"] == "totp"

    right = client.post(AUTHENTICATE, {"code": app.now()})
    assert right.status_code == 302 and right["Location"] == "/"
    assert client.get(SECURITY).status_code == 200
    # The audit trail says how: a password, then the app.
    signed_in = AuditEvent.objects.get(action=AuditAction.USER_SIGNED_IN)
    assert signed_in.payload["method"] == "password"
    assert signed_in.payload["second_factor"] == "totp"


def test_a_recovery_code_signs_in_once(client, assigner):
    _, codes = give_totp(assigner)

    password_step(client, assigner)
    assert client.post(AUTHENTICATE, {"code": codes[3]}).status_code == 302
    assert client.get(SECURITY).status_code == 200
    assert "9 unused" in client.get(SECURITY).content.decode()
    client.post("/accounts/logout/")

    password_step(client, assigner)
    again = client.post(AUTHENTICATE, {"code": codes[3]})
    assert again.status_code == 200
    assert client.get(SECURITY).status_code == 302
    assert client.post(AUTHENTICATE, {"code": codes[4]}).status_code == 302


@pytest.mark.parametrize("path", [ACTIVATE, DEACTIVATE, GENERATE])
def test_changing_a_factor_after_an_old_sign_in_asks_to_reauthenticate_first(
    client, assigner, settings, path
):
    sign_in(client, assigner)
    if path != ACTIVATE:
        give_totp(assigner)
    before = sorted(Authenticator.objects.filter(user_id=assigner.pk).values_list("pk", "data"))
    age_the_sign_in(client, settings.ACCOUNT_REAUTHENTICATION_TIMEOUT + 1)

    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/reauthenticate/?next={quote(path, safe='')}"
    # A stale POST is refused and changes nothing.
    refused = client.post(path, {"code": "123456"})
    assert refused.status_code == 302
    after = sorted(Authenticator.objects.filter(user_id=assigner.pk).values_list("pk", "data"))
    assert after == before


@pytest.mark.parametrize("action", ["add", "remove"])
def test_adding_or_removing_a_key_after_an_old_sign_in_asks_to_reauthenticate_first(
    client, assigner, settings, action
):
    sign_in(client, assigner)
    key = give_security_key(assigner, "Laptop")
    path = {
        "add": "/accounts/2fa/webauthn/add/",
        "remove": f"/accounts/2fa/webauthn/keys/{key.pk}/remove/",
    }[action]
    age_the_sign_in(client, settings.ACCOUNT_REAUTHENTICATION_TIMEOUT + 1)

    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].endswith(f"?next={quote(path, safe='')}")
    # A stale POST is refused and changes nothing.
    refused = client.post(path, {"name": "Another", "credential": "{}"})
    assert refused.status_code == 302
    assert list(Authenticator.objects.filter(user_id=assigner.pk).values_list("pk", flat=True)) == [
        key.pk
    ]


def test_the_code_counts_as_reauthentication_for_tokens(client, assigner, settings):
    """The re-authentication in front of tokens, webhooks and model keys takes the
    authenticator app's code as well as the password."""
    sign_in(client, assigner)
    app, _ = give_totp(assigner)
    age_the_sign_in(client, settings.ACCOUNT_REAUTHENTICATION_TIMEOUT + 1)
    assert client.get(TOKENS).status_code == 302

    offered = client.get(f"/accounts/reauthenticate/?next={TOKENS}").content.decode()
    assert REAUTHENTICATE in offered  # beside the password

    wrong = client.post(f"{REAUTHENTICATE}?next={TOKENS}", {"code": other_than(app.now())})
    assert wrong.status_code == 200
    assert client.get(TOKENS).status_code == 302

    right = client.post(f"{REAUTHENTICATE}?next={TOKENS}", {"code": app.now()})
    assert right.status_code == 302 and right["Location"] == TOKENS
    assert client.get(TOKENS).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_turning_the_app_off_removes_it_and_its_codes_and_is_audited(client, assigner, mailbox):
    sign_in(client, assigner)
    give_totp(assigner)

    assert client.get(DEACTIVATE).status_code == 200
    response = client.post(DEACTIVATE)

    assert response.status_code == 302
    assert not Authenticator.objects.filter(user_id=assigner.pk).exists()
    removed = AuditEvent.objects.filter(action=AuditAction.USER_SECOND_FACTOR_REMOVED)
    assert sorted(e.payload["factor"] for e in removed) == ["recovery_codes", "totp"]
    assert "No second factor" in client.get(SECURITY).content.decode()


def test_an_operator_removes_a_lost_factor_with_a_reason_on_the_audit_trail(assigner):
    give_totp(assigner)

    call_command("remove_second_factor", "LEAD@example.com", "--reason", "ticket 42: lost phone")

    assert not Authenticator.objects.filter(user_id=assigner.pk).exists()
    event = AuditEvent.objects.get(action=AuditAction.SECOND_FACTOR_RESET_BY_OPERATOR)
    assert event.payload == {
        "factors": ["recovery_codes", "totp"],
        "reason": "ticket 42: lost phone",
    }
    assert event.subject_id == assigner.pk


def test_an_operator_removes_lost_security_keys_and_passkeys_too(assigner, settings):
    give_security_key(assigner, "Laptop", passkey=True)
    give_security_key(assigner, "Desk key", passkey=False)
    make_codes(assigner)

    call_command("remove_second_factor", assigner.email, "--reason", "ticket 44: lost bag")

    assert not Authenticator.objects.filter(user_id=assigner.pk).exists()
    event = AuditEvent.objects.get(action=AuditAction.SECOND_FACTOR_RESET_BY_OPERATOR)
    assert event.payload["factors"] == ["recovery_codes", "webauthn", "webauthn"]


def test_removing_a_factor_nobody_has_changes_nothing(assigner):
    with pytest.raises(CommandError, match="has no second factor"):
        call_command("remove_second_factor", assigner.email, "--reason", "ticket 43")
    with pytest.raises(CommandError, match="--reason"):
        call_command("remove_second_factor", assigner.email, "--reason", "  ")
    assert not AuditEvent.objects.filter(
        action=AuditAction.SECOND_FACTOR_RESET_BY_OPERATOR
    ).exists()


# The session, the user, the Accord's waiting count in the layout, the factors
# (one, however many keys), the account's connections, the providers.
SECURITY_QUERIES = 6


@pytest.mark.parametrize("with_factor", [False, True])
def test_the_security_page_takes_its_budget_of_queries(
    client, assigner, with_factor, django_assert_num_queries
):
    if with_factor:
        give_totp(assigner)
        for name in ("Desk key", "Laptop"):
            give_security_key(assigner, name)
    client.force_login(assigner)
    client.get(SECURITY)  # warm: content types, the session's first read

    with django_assert_num_queries(SECURITY_QUERIES):
        assert client.get(SECURITY).status_code == 200


def test_reencrypt_secrets_rewrites_the_factors_under_the_newest_key(assigner, settings):
    from cryptography.fernet import Fernet

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEYS = [old]
    app, codes = give_totp(assigner)
    settings.FIELD_ENCRYPTION_KEYS = [new, old]

    out = io.StringIO()
    call_command("reencrypt_secrets", stdout=out)
    assert "Re-encrypted 2 secret(s)" in out.getvalue()

    settings.FIELD_ENCRYPTION_KEYS = [new]  # the old key dropped
    totp = Authenticator.objects.get(user_id=assigner.pk, type=Authenticator.Type.TOTP)
    assert decrypt_str(totp.data["secret"]) == app.secret
    recovery = Authenticator.objects.get(
        user_id=assigner.pk, type=Authenticator.Type.RECOVERY_CODES
    )
    assert use_code(recovery, codes[0])  # its HMAC key read under the new key
    again = io.StringIO()
    call_command("reencrypt_secrets", stdout=again)
    assert "Re-encrypted 0 secret(s) under the newest key; 2 already were" in again.getvalue()


def test_no_recovery_code_is_stored_in_plaintext_or_readable_without_the_key(
    client, assigner, settings
):
    # Only keyed hashes (docs/security.md, "What is stored"): neither a code
    # nor anything they derive from is in the database or a session, and a
    # copy without FIELD_ENCRYPTION_KEYS cannot check a code (the hashes' key
    # is encrypted with them).
    from cryptography.fernet import Fernet
    from django.contrib.sessions.models import Session
    from django.db import connection

    _, codes = give_totp(assigner)
    password_step(client, assigner)
    assert client.post(AUTHENTICATE, {"code": codes[0]}).status_code == 302

    with connection.cursor() as cursor:
        cursor.execute("SELECT data FROM mfa_authenticator")
        stored = " ".join(str(row[0]) for row in cursor.fetchall())
    sessions = " ".join(str(s.get_decoded()) for s in Session.objects.all())
    for code in codes:
        assert code not in stored and code not in sessions
    row = Authenticator.objects.get(user_id=assigner.pk, type=Authenticator.Type.RECOVERY_CODES)
    assert "seed" not in row.data and "used_mask" not in row.data
    assert len(row.data["hashes"]) == 9  # the used one's hash is gone
    key = bytes.fromhex(decrypt_str(row.data["key"]))
    assert row.data["key"] not in sessions and key.hex() not in stored

    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]  # a copy, not the key
    with pytest.raises(DecryptionError):
        decrypt_str(row.data["key"])
    assert not use_code(row, codes[1])
