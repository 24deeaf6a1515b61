"""Secrets at rest: a Fernet-encrypted text field and the helpers behind it.

Keys come from settings.FIELD_ENCRYPTION_KEYS: Fernet keys (URL-safe base64
of 32 bytes, as `Fernet.generate_key()` makes them), never derived from
SECRET_KEY, so rotating SECRET_KEY after a leak leaves stored secrets
readable. The first key encrypts, every key decrypts; how to rotate one:
docs/security.md, "Encryption keys".
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeGuard

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.apps import apps
from django.conf import settings
from django.db import connections, models, router


class DecryptionError(Exception):
    """A stored value that none of FIELD_ENCRYPTION_KEYS can decrypt."""


log = logging.getLogger(__name__)

UNDECRYPTABLE_MESSAGE = "stored with an encryption key that is no longer configured"


@dataclass(frozen=True)
class Undecryptable:
    """What an EncryptedTextField reads when none of FIELD_ENCRYPTION_KEYS
    decrypts the stored value (the keys were rotated without running
    `reencrypt_secrets`, or a key was lost).

    Reading never raises, so a page or the admin that loads the row still
    renders; the owner of the secret decides what it means (a chat channel
    is shown broken and nudges go by e-mail). It is falsy, like an empty
    secret, so code that only asks "is there a secret?" falls back safely,
    and it is never sent anywhere: it is not a string. Saving the row keeps
    the stored ciphertext as it was (a key found again makes it readable).
    """

    ciphertext: str = field(repr=False)
    message: ClassVar[str] = UNDECRYPTABLE_MESSAGE

    def __bool__(self) -> bool:
        return False

    def __str__(self) -> str:
        return ""


def is_undecryptable(value: object) -> TypeGuard[Undecryptable]:
    return isinstance(value, Undecryptable)


MAKE_A_KEY = (
    "python3 -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())'"
)


def is_fernet_key(key: str) -> bool:
    try:
        Fernet(key)
    except (ValueError, TypeError):
        return False
    return True


@functools.lru_cache(maxsize=8)
def _multifernet(keys: tuple[str, ...]) -> MultiFernet:
    if not keys:
        raise ValueError(f"FIELD_ENCRYPTION_KEYS is empty; make a key with: {MAKE_A_KEY}")
    return MultiFernet([Fernet(key) for key in keys])


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


if TYPE_CHECKING:
    # Django's fields are generic only in the stubs. What it reads is a str or
    # an Undecryptable, left to the owner of the secret: Any, as a bare
    # TextField subclass was.
    _TextField = models.TextField[Any, Any]
else:
    _TextField = models.TextField


class EncryptedTextField(_TextField):
    """Text stored Fernet-encrypted; Python sees the plaintext.

    The empty string is stored as itself (nothing secret in it). Ciphertexts
    differ on every save, so the column cannot be filtered on by value. A
    value no configured key decrypts reads as an `Undecryptable` marker
    instead of raising, and is written back unchanged.
    """

    description = "Text encrypted at rest"

    def from_db_value(
        self, value: str | None, expression: object, connection: object
    ) -> str | Undecryptable | None:
        if value is None or value == "":
            return value
        try:
            return decrypt_str(value)
        except DecryptionError:
            # Names the column, never the value.
            log.warning(
                "A value of %s.%s could not be decrypted with any of FIELD_ENCRYPTION_KEYS.",
                self.model._meta.label,
                self.name,
            )
            return Undecryptable(value)

    def to_python(self, value: Any) -> Any:
        if isinstance(value, Undecryptable):
            return value
        return super().to_python(value)

    def get_prep_value(self, value: Any) -> Any:
        if isinstance(value, Undecryptable):
            return value.ciphertext  # kept as stored: nothing to encrypt
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt_str(value)


def _under_newest_key(token: str) -> bool:
    newest = _multifernet((settings.FIELD_ENCRYPTION_KEYS[0],))  # cached, like _cipher()
    try:
        newest.decrypt(token.encode("ascii"))
    except InvalidToken:
        return False
    return True


@dataclass
class ReencryptReport:
    rewritten: int = 0
    current: int = 0  # already under the newest key
    unreadable: list[str] = field(default_factory=list)  # "label pk": no key decrypts it


# Secrets kept outside an EncryptedTextField (allauth.mfa's second factors, in
# a JSON column: accounts.mfa): their owner registers a function, called by
# reencrypt_all with its report, that rewrites them the same way.
EXTRA_REENCRYPTORS: list[Callable[[ReencryptReport], None]] = []


def under_newest_key(token: str) -> bool:
    """True when the first (newest) of FIELD_ENCRYPTION_KEYS encrypted `token`."""
    return _under_newest_key(token)


def encrypted_columns() -> list[tuple[type[models.Model], EncryptedTextField]]:
    return [
        (model, model_field)
        for model in apps.get_models()
        for model_field in model._meta.concrete_fields
        if isinstance(model_field, EncryptedTextField)
    ]


def reencrypt_all() -> ReencryptReport:
    """Rewrite every stored secret that is not under the newest key, so that
    older keys can be dropped. Works on the raw column, one row at a time: a
    row is rewritten only if its ciphertext is still the one read, so a save
    made in between wins and nothing is locked."""
    report = ReencryptReport()
    for model, model_field in encrypted_columns():
        database = router.db_for_write(model)
        connection = connections[database]
        quote = connection.ops.quote_name
        table, column = quote(model._meta.db_table), quote(model_field.column)
        pk = quote(model._meta.pk.column)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {pk}, {column} FROM {table} WHERE {column} IS NOT NULL AND {column} <> ''"  # noqa: S608
            )
            rows = cursor.fetchall()
        for row_pk, token in rows:
            if _under_newest_key(token):
                report.current += 1
                continue
            try:
                rotated = reencrypt(token)
            except DecryptionError:
                row = model._meta.pk.to_python(row_pk)
                report.unreadable.append(f"{model._meta.label}.{model_field.name} {row}")
                continue
            with connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {table} SET {column} = %s WHERE {pk} = %s AND {column} = %s",  # noqa: S608
                    [rotated, row_pk, token],
                )
                report.rewritten += cursor.rowcount
    for reencryptor in EXTRA_REENCRYPTORS:
        reencryptor(report)
    return report
