"""Secrets at rest: a Fernet-encrypted text field and the helpers behind it.

Keys come from settings.FIELD_ENCRYPTION_KEYS (strings of any shape; each is
turned into a Fernet key with SHA-256). The first key encrypts, every key
decrypts, so a key is rotated by prepending a new one and, when convenient,
re-saving the rows (`reencrypt`). Used for chat webhook URLs now, and for
webhook secrets and provider keys later.
"""

from __future__ import annotations

import base64
import functools
import hashlib

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import models


class DecryptionError(Exception):
    """A stored value that none of FIELD_ENCRYPTION_KEYS can decrypt."""


def _fernet_key(secret: str) -> bytes:
    return base64.urlsafe_b64encode(hashlib.sha256(secret.encode("utf-8")).digest())


@functools.lru_cache(maxsize=8)
def _multifernet(keys: tuple[str, ...]) -> MultiFernet:
    if not keys:
        raise ValueError("FIELD_ENCRYPTION_KEYS is empty.")
    return MultiFernet([Fernet(_fernet_key(key)) for key in keys])


def _cipher() -> MultiFernet:
    # Keyed on the current setting, so a test's override_settings is honoured.
    return _multifernet(tuple(settings.FIELD_ENCRYPTION_KEYS))


def encrypt_str(plaintext: str) -> str:
    return _cipher().encrypt(plaintext.encode("utf-8")).decode("ascii")


def decrypt_str(token: str) -> str:
    try:
        return _cipher().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, UnicodeError) as exc:
        raise DecryptionError(
            "A stored secret could not be decrypted with any of FIELD_ENCRYPTION_KEYS."
        ) from exc


def reencrypt(token: str) -> str:
    """The same secret encrypted under the first (newest) key."""
    try:
        return _cipher().rotate(token.encode("ascii")).decode("ascii")
    except InvalidToken as exc:
        raise DecryptionError("Cannot re-encrypt: no key decrypts this value.") from exc


class EncryptedTextField(models.TextField):
    """Text stored Fernet-encrypted; Python sees the plaintext.

    The empty string is stored as itself (nothing secret in it). Ciphertexts
    differ on every save, so the column cannot be filtered on by value.
    """

    description = "Text encrypted at rest"

    def from_db_value(self, value, expression, connection):
        if value is None or value == "":
            return value
        return decrypt_str(value)

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt_str(value)
