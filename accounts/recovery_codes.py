"""Recovery codes: one-time codes that sign a person in when their app or key
is lost, shown once when they are made and stored only as keyed hashes
(docs/security.md, "Second factor").

They live in allauth.mfa's `Authenticator` row of type `recovery_codes`, as
allauth's own would, so allauth's sign-in stage, its removal of the codes with
the last factor, the operator's `remove_second_factor` and the admin treat
them as they treat any factor. What the row holds is the service's:

    {"key": <HMAC key, encrypted with FIELD_ENCRYPTION_KEYS>,
     "hashes": [<hex HMAC-SHA256 of each unused code>, ...],
     "total": <how many were made>}

The key is random, one per set of codes, and stored Fernet-encrypted like
every other secret (lib.crypto), so `reencrypt_secrets` rewrites it under a
new key (accounts.mfa.second_factors_reencrypt) and no code stops working
when an old key is dropped. A copy of the database without
FIELD_ENCRYPTION_KEYS holds hashes under a key it does not have: 10^8 codes
are then no shortcut. A code is used up by removing its hash.

allauth's own recovery codes (a seed the codes are derived from, which its
pages show again) are off: `MFA_SUPPORTED_TYPES` leaves them out, so allauth
neither makes them nor mounts its pages for them; accounts.urls.auth mounts
these at the same addresses, and accounts.forms.AuthenticateForm (MFA_FORMS)
checks a code against them at sign-in. Rows of allauth's kind made before are
rewritten as hashes of the same unused codes by migration
0007_recovery_codes_hashed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets

from allauth.account.adapter import get_adapter as get_account_adapter
from allauth.mfa import app_settings as mfa_settings
from allauth.mfa import signals
from allauth.mfa.models import Authenticator
from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest

from accounts.mfa import user_has_second_factor
from accounts.models import User
from lib.crypto import DecryptionError, decrypt_str, encrypt_str

# The session key under which the codes just made wait, encrypted, for the one
# page that shows them (it removes them as it reads them).
FRESH_CODES_SESSION_KEY = "accounts.recovery_codes.fresh"


def _digest(key: bytes, code: str) -> str:
    return hmac.new(key, code.encode("ascii"), hashlib.sha256).hexdigest()


def _normalised(code: str) -> str:
    """What the person typed, without the spaces and dashes a copy may add."""
    return "".join(code.split()).replace("-", "")


def hashed(codes: list[str]) -> dict[str, object]:
    """The row's data for `codes`: a new random key (encrypted) and each
    code's HMAC under it; the codes themselves are not kept."""
    key = secrets.token_bytes(32)
    return {
        "key": encrypt_str(key.hex()),
        "hashes": [_digest(key, _normalised(code)) for code in codes],
        "total": len(codes),
    }


def new_codes() -> list[str]:
    """MFA_RECOVERY_CODE_COUNT distinct random codes of
    MFA_RECOVERY_CODE_DIGITS digits (allauth's settings: 10 of 8)."""
    digits: int = mfa_settings.RECOVERY_CODE_DIGITS
    count: int = mfa_settings.RECOVERY_CODE_COUNT
    codes: list[str] = []
    while len(codes) < count:
        code = str(secrets.randbelow(10**digits)).zfill(digits)
        if code not in codes:
            codes.append(code)
    return codes


@transaction.atomic
def use_code(row: Authenticator, code: str) -> bool:
    """True, once, for an unused code of the row: its hash is removed under
    the row's lock, so the same code never signs in twice, even at once.
    Every hash is compared, in constant time."""
    locked = Authenticator.objects.select_for_update().filter(pk=row.pk).first()
    if locked is None:
        return False  # removed in the meantime
    hashes = locked.data.get("hashes")
    token = locked.data.get("key")
    if not isinstance(hashes, list) or not isinstance(token, str):
        return False  # not a row of ours (see migration 0007): accepts nothing
    try:
        key = bytes.fromhex(decrypt_str(token))
    except DecryptionError:
        return False
    given = _digest(key, _normalised(code))
    found = None
    for index, stored in enumerate(hashes):
        if hmac.compare_digest(given, str(stored)) and found is None:
            found = index
    if found is None:
        return False
    del hashes[found]
    locked.data["hashes"] = hashes
    locked.save(update_fields=["data"])
    row.data = locked.data
    return True


def _replace_codes(user: User) -> tuple[Authenticator, list[str]]:
    # Lock the person's row: two requests making codes at once make one set
    # (allauth's flow does the same; the codes' row itself is replaced).
    User.objects.select_for_update().filter(pk=user.pk).first()
    Authenticator.objects.filter(user_id=user.pk, type=Authenticator.Type.RECOVERY_CODES).delete()
    codes = new_codes()
    row = Authenticator.objects.create(
        user=user, type=Authenticator.Type.RECOVERY_CODES, data=hashed(codes)
    )
    return row, codes


def make_codes(user: User) -> list[str]:
    """A new set of codes for `user` (replacing any), returned once; no
    signal, no page (for the tests and the flows below)."""
    with transaction.atomic():
        _, codes = _replace_codes(user)
    return codes


def _keep_to_show(request: HttpRequest, codes: list[str]) -> None:
    # Until the page that shows them is read: encrypted, never in clear in
    # the session's row.
    request.session[FRESH_CODES_SESSION_KEY] = encrypt_str(json.dumps(codes))


def fresh_codes(request: HttpRequest) -> list[str] | None:
    """The codes just made in this session, once: they are removed as read."""
    token = request.session.pop(FRESH_CODES_SESSION_KEY, None)
    if not isinstance(token, str):
        return None
    try:
        codes = json.loads(decrypt_str(token))
    except (DecryptionError, ValueError):
        return None
    return [str(code) for code in codes] if isinstance(codes, list) else None


def can_make_codes(user: User) -> bool:
    """Codes come with a second factor (an app or a key), never alone."""
    return user_has_second_factor(user)


def regenerate(request: HttpRequest, user: User) -> None:
    """ "Make new codes": the old ones stop working, the new ones wait to be
    shown once; audited (`user_recovery_codes_made`, through allauth's
    `authenticator_reset`) and the person is told by mail, as allauth does."""
    with transaction.atomic():
        row, codes = _replace_codes(user)
        adapter = get_account_adapter(request)

        def on_commit() -> None:
            signals.authenticator_reset.send(
                sender=Authenticator, request=request, user=user, authenticator=row
            )
            adapter.send_notification_mail("mfa/email/recovery_codes_generated", user)

        transaction.on_commit(on_commit)
    _keep_to_show(request, codes)
    messages.warning(request, "New recovery codes made: the old ones no longer work.")


def needs_first_codes(user: User) -> bool:
    """True when the person has a second factor but no codes yet (they come
    with the first app or key)."""
    return (
        user_has_second_factor(user)
        and not Authenticator.objects.filter(
            user_id=user.pk, type=Authenticator.Type.RECOVERY_CODES
        ).exists()
    )


def make_first_codes(request: HttpRequest, user: User) -> None:
    """The codes that come with the first app or key: audited as a factor
    added (`user_second_factor_added`, through allauth's `authenticator_added`,
    as allauth's own did), no mail (the factor's own mail says it)."""
    with transaction.atomic():
        row, codes = _replace_codes(user)
        transaction.on_commit(
            lambda: signals.authenticator_added.send(
                sender=Authenticator, request=request, user=user, authenticator=row
            )
        )
    _keep_to_show(request, codes)
