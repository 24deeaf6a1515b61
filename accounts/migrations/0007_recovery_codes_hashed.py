"""Recovery codes made by allauth (a seed, encrypted, that the codes are
derived from, and a mask of the used ones) become the service's own: the
HMAC-SHA256 of each unused code under a new random key, the key encrypted
with FIELD_ENCRYPTION_KEYS (accounts.recovery_codes). The person's codes stay
the same; the seed is gone.

The derivation is allauth 65's (allauth.mfa.recovery_codes.internal.auth),
copied here so that this migration does not change when allauth does; so is
the stored shape. A seed no configured key decrypts gave no working code
before (allauth could not derive them): its row is left with no code, and the
person makes new ones on Settings, Security.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from django.conf import settings
from django.db import migrations

from lib.crypto import DecryptionError, decrypt_str, encrypt_str


def _allauth_codes(seed: str, count: int, digits: int) -> list[str]:
    codes = []
    h = hmac.new(key=seed.encode("ascii"), msg=None, digestmod=hashlib.sha1)
    byte_count = min(digits // 2, h.digest_size)
    for i in range(count):
        h.update(f"{i:3},".encode())
        value = int.from_bytes(h.digest()[:byte_count], byteorder="big", signed=False)
        codes.append(str(value % 10**digits).zfill(digits))
    return codes


def _unused_codes(data: dict, count: int, digits: int) -> list[str]:
    if data.get("migrated_codes") is not None:
        # Codes allauth took over from django-allauth-2fa: kept one by one.
        return [decrypt_str(code) for code in data["migrated_codes"]]
    used_mask = int(data.get("used_mask", 0))
    codes = _allauth_codes(decrypt_str(data["seed"]), count, digits)
    return [code for i, code in enumerate(codes) if not used_mask & (1 << i)]


def _hashed(codes: list[str], total: int) -> dict:
    key = secrets.token_bytes(32)
    return {
        "key": encrypt_str(key.hex()),
        "hashes": [
            hmac.new(key, code.encode("ascii"), hashlib.sha256).hexdigest() for code in codes
        ],
        "total": total,
    }


def hash_recovery_codes(apps, schema_editor) -> None:
    Authenticator = apps.get_model("mfa", "Authenticator")
    count = getattr(settings, "MFA_RECOVERY_CODE_COUNT", 10)
    digits = getattr(settings, "MFA_RECOVERY_CODE_DIGITS", 8)
    rows = Authenticator.objects.filter(type="recovery_codes").order_by("pk")
    for row in rows.iterator():
        if "hashes" in row.data:
            continue  # already the service's
        try:
            codes = _unused_codes(row.data, count, digits)
        except (DecryptionError, KeyError, ValueError):
            codes = []
        total = count if row.data.get("migrated_codes") is None else len(codes)
        row.data = _hashed(codes, total)
        row.save(update_fields=["data"])


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0006_sso_provider_enforces_mfa"),
        ("mfa", "0003_authenticator_type_uniq"),
    ]

    # Backwards it changes nothing: the seed is gone, and the codes cannot be
    # derived again from their hashes (that is the point).
    operations = [migrations.RunPython(hash_recovery_codes, migrations.RunPython.noop)]
