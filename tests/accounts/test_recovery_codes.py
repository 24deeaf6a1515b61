"""Recovery codes (accounts.recovery_codes): made on the service's own pages,
shown once, stored as keyed hashes only, each accepted once at sign-in and at
re-authentication, behind the limit on wrong codes; allauth's seeded codes
turned into hashes of the same codes by the data migration."""

from __future__ import annotations

import hashlib
import hmac

import pyotp
import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
from allauth.mfa.totp.internal.auth import TOTP
from django.contrib.sessions.models import Session

from accounts.recovery_codes import make_codes, use_code
from audit.models import AuditAction, AuditEvent
from lib.crypto import decrypt_str, encrypt_str
from tests.harness.api import PASSWORD, age_the_sign_in, sign_in
from tests.harness.migrations import latest, migrate, schema_before

pytestmark = pytest.mark.django_db

VIEW = "/accounts/2fa/recovery-codes/"
GENERATE = "/accounts/2fa/recovery-codes/generate/"
AUTHENTICATE = "/accounts/2fa/authenticate/"
REAUTHENTICATE = "/accounts/2fa/reauthenticate/"
TOKENS = "/settings/tokens/"
SECURITY = "/settings/security/"


def give_app(user) -> pyotp.TOTP:
    secret = pyotp.random_base32()
    TOTP.activate(user, secret)
    return pyotp.TOTP(secret)


def codes_row(user) -> Authenticator:
    return Authenticator.objects.get(user_id=user.pk, type=Authenticator.Type.RECOVERY_CODES)


def password_step(client, user):
    return client.post("/accounts/login/", {"login": user.email, "password": PASSWORD})


def signed_in(client) -> bool:
    return client.get(SECURITY).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_new_codes_are_shown_once_and_the_old_ones_stop_working(client, assigner, mailbox):
    sign_in(client, assigner)
    give_app(assigner)
    old = make_codes(assigner)

    asked = client.get(GENERATE)
    assert asked.status_code == 200
    assert "Your 10 unused codes will stop working" in asked.content.decode()

    made = client.post(GENERATE)
    assert made.status_code == 302 and made["Location"] == VIEW
    shown = client.get(VIEW)
    codes = shown.context["codes"]
    assert len(codes) == 10 and len(set(codes)) == 10
    assert all(len(code) == 8 and code.isdigit() for code in codes)
    page = shown.content.decode()
    assert all(code in page for code in codes)
    assert "no-store" in shown["Cache-Control"]

    # Shown once: the page again shows none of them, only how many are left.
    again = client.get(VIEW)
    assert again.context["codes"] is None
    assert not any(code in again.content.decode() for code in codes)
    assert "10 of 10 unused" in again.content.decode()
    assert GENERATE in again.content.decode()

    row = codes_row(assigner)
    assert not use_code(row, old[0])  # the old set is gone
    assert use_code(row, codes[0])
    made_events = AuditEvent.objects.filter(action=AuditAction.USER_RECOVERY_CODES_MADE)
    assert [e.payload["factor"] for e in made_events] == ["recovery_codes"]
    assert [m.to for m in mailbox] == [[assigner.email]]  # told by mail


def test_codes_are_not_made_without_an_app_or_a_key(client, assigner):
    sign_in(client, assigner)

    refused = client.post(GENERATE)

    assert refused.status_code == 400
    assert "set one up first" in refused.content.decode()
    assert not Authenticator.objects.filter(user_id=assigner.pk).exists()
    assert "Recovery codes come with" in client.get(VIEW).content.decode()


def test_making_codes_after_an_old_sign_in_asks_for_the_password_first(client, assigner, settings):
    sign_in(client, assigner)
    give_app(assigner)
    before = make_codes(assigner)
    age_the_sign_in(client, settings.ACCOUNT_REAUTHENTICATION_TIMEOUT + 1)

    assert client.get(GENERATE).status_code == 302
    assert client.post(GENERATE).status_code == 302  # refused, not parked
    assert use_code(codes_row(assigner), before[0])  # the same set still


def test_a_code_is_stored_as_an_hmac_under_the_rows_encrypted_key(assigner):
    give_app(assigner)
    codes = make_codes(assigner)

    row = codes_row(assigner)
    key = bytes.fromhex(decrypt_str(row.data["key"]))
    assert len(key) == 32
    assert row.data["hashes"] == [
        hmac.new(key, code.encode(), hashlib.sha256).hexdigest() for code in codes
    ]
    assert row.data["total"] == 10
    assert not any(code in str(row.data) for code in codes)


def test_a_code_works_once_and_a_wrong_one_is_refused_and_audited(client, assigner):
    app = give_app(assigner)
    codes = make_codes(assigner)

    password_step(client, assigner)
    wrong = client.post(AUTHENTICATE, {"code": "00000000" if "00000000" not in codes else "1"})
    assert wrong.status_code == 200 and not signed_in(client)
    failed = AuditEvent.objects.get(action=AuditAction.USER_SECOND_FACTOR_FAILED)
    assert failed.payload["factor"] == "totp"  # announced against the main factor

    # Typed with the spaces or dashes a copy may add.
    code = codes[5]
    assert client.post(AUTHENTICATE, {"code": f" {code[:4]}-{code[4:]} "}).status_code == 302
    signed = AuditEvent.objects.get(action=AuditAction.USER_SIGNED_IN)
    assert signed.payload["second_factor"] == "recovery_codes"
    assert len(codes_row(assigner).data["hashes"]) == 9
    client.post("/accounts/logout/")

    password_step(client, assigner)
    assert client.post(AUTHENTICATE, {"code": codes[5]}).status_code == 200
    assert not signed_in(client)
    # The app's code still works beside the codes.
    assert client.post(AUTHENTICATE, {"code": app.now()}).status_code == 302


def test_the_limit_on_wrong_codes_holds_for_recovery_codes_too(client, assigner):
    give_app(assigner)
    codes = make_codes(assigner)
    password_step(client, assigner)

    wrong = [str(n).zfill(8) for n in range(100) if str(n).zfill(8) not in codes][:5]
    for code in wrong:  # allauth's limit: 5 wrong codes per account in 5 minutes
        assert client.post(AUTHENTICATE, {"code": code}).status_code == 200

    refused = client.post(AUTHENTICATE, {"code": codes[0]})
    assert refused.status_code == 200 and not signed_in(client)
    assert len(codes_row(assigner).data["hashes"]) == 10  # not used up


def test_a_code_counts_as_reauthentication(client, assigner, settings):
    sign_in(client, assigner)
    give_app(assigner)
    codes = make_codes(assigner)
    age_the_sign_in(client, settings.ACCOUNT_REAUTHENTICATION_TIMEOUT + 1)
    assert client.get(TOKENS).status_code == 302

    right = client.post(f"{REAUTHENTICATE}?next={TOKENS}", {"code": codes[2]})

    assert right.status_code == 302 and right["Location"] == TOKENS
    assert client.get(TOKENS).status_code == 200
    assert not use_code(codes_row(assigner), codes[2])


def test_the_codes_wait_in_the_session_encrypted_and_only_until_shown(client, assigner):
    sign_in(client, assigner)
    give_app(assigner)
    client.post(GENERATE)

    sessions = " ".join(str(s.get_decoded()) for s in Session.objects.all())
    shown = client.get(VIEW).context["codes"]
    assert shown and not any(code in sessions for code in shown)
    after = " ".join(str(s.get_decoded()) for s in Session.objects.all())
    assert "accounts.recovery_codes.fresh" not in after


def test_a_used_code_is_refused_even_by_a_second_request_at_once(assigner):
    # Each use locks the row: the second of two uses of one code finds its
    # hash gone (the row read before the first one's use is stale).
    give_app(assigner)
    codes = make_codes(assigner)
    first, second = codes_row(assigner), codes_row(assigner)

    assert use_code(first, codes[0])
    assert not use_code(second, codes[0])
    assert use_code(second, codes[1])
    assert len(codes_row(assigner).data["hashes"]) == 8


# The data migration: allauth's seeded rows become hashes of the same codes.
BEFORE = [("accounts", "0006_sso_provider_enforces_mfa")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_turns_allauths_seed_into_hashes_of_the_same_codes(make_user):
    person = make_user("seeded@example.com")
    other = make_user("imported@example.com")
    unreadable = make_user("lost-key@example.com")
    seed = RecoveryCodes.generate_seed()
    with schema_before(BEFORE, keep_rows=True) as old_apps:
        Authenticator_ = old_apps.get_model("mfa", "Authenticator")
        seeded = Authenticator_.objects.create(
            user_id=person.pk,
            type="recovery_codes",
            data={"seed": encrypt_str(seed), "used_mask": 0b1001},  # codes 0 and 3 used
        )
        Authenticator_.objects.create(
            user_id=other.pk,
            type="recovery_codes",
            data={"migrated_codes": [encrypt_str("11112222"), encrypt_str("33334444")]},
        )
        Authenticator_.objects.create(
            user_id=unreadable.pk,
            type="recovery_codes",
            data={"seed": "not-a-token", "used_mask": 0},
        )
        # The codes as allauth derives them from that seed.
        codes = RecoveryCodes(Authenticator(data={"seed": encrypt_str(seed)})).generate_codes()
        migrate(latest())

    row = Authenticator.objects.get(pk=seeded.pk)
    assert sorted(row.data) == ["hashes", "key", "total"]
    assert seed not in str(row.data) and not any(code in str(row.data) for code in codes)
    assert len(row.data["hashes"]) == 8 and row.data["total"] == 10
    assert not use_code(row, codes[0]) and not use_code(row, codes[3])  # used before
    for code in [codes[i] for i in (1, 2, 4, 5, 6, 7, 8, 9)]:
        assert use_code(row, code)
    assert codes_row(person).data["hashes"] == []

    imported = codes_row(other)
    assert use_code(imported, "33334444") and use_code(imported, "11112222")
    assert codes_row(unreadable).data["hashes"] == []  # gave no code before either


def test_allauths_own_recovery_codes_stay_off():
    # allauth's would keep a seed and could show the codes again: it must not
    # make them (MFA_SUPPORTED_TYPES) nor serve its pages (no download).
    from allauth.mfa import app_settings
    from django.urls import NoReverseMatch, resolve, reverse

    from accounts import views

    assert "recovery_codes" not in app_settings.SUPPORTED_TYPES
    with pytest.raises(NoReverseMatch):
        reverse("mfa_download_recovery_codes")
    assert resolve(VIEW).func is views.recovery_codes_index
    assert resolve(GENERATE).func is views.generate_recovery_codes
    assert app_settings.FORMS["authenticate"] == "accounts.forms.AuthenticateForm"
    assert app_settings.FORMS["reauthenticate"] == "accounts.forms.ReauthenticateForm"
