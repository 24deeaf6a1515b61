"""The shape of an API token: generation, checksum, digest and verification.

A token reads `svc_` + 30 random base62 characters + a 6-character base62
CRC32 checksum of the random part (GitHub's scheme for `ghp_` tokens). The type
prefix lets secret scanners recognise a leaked token, and the checksum lets
them, and us, tell a real token from a typo without asking the database.

Only the SHA-256 digest of the whole plaintext and a short display prefix are
stored. 30 base62 characters carry about 178 bits of randomness, so a plain
(unsalted, fast) SHA-256 is the right digest: there is nothing to brute-force,
and the digest can be looked up directly through a unique index.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import string
import zlib

TOKEN_TYPE = "svc_"
RANDOM_LENGTH = 30
CHECKSUM_LENGTH = 6
TOKEN_LENGTH = len(TOKEN_TYPE) + RANDOM_LENGTH + CHECKSUM_LENGTH
# What the settings page, the admin and the audit trail show: the type plus
# the first 8 random characters. Enough to tell tokens apart, useless to guess.
DISPLAY_PREFIX_LENGTH = len(TOKEN_TYPE) + 8

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
_SHAPE = re.compile(
    rf"{TOKEN_TYPE}(?P<random>[0-9A-Za-z]{{{RANDOM_LENGTH}}})"
    rf"(?P<checksum>[0-9A-Za-z]{{{CHECKSUM_LENGTH}}})"
)


def _base62(number: int, width: int) -> str:
    digits = []
    while number:
        number, remainder = divmod(number, 62)
        digits.append(BASE62[remainder])
    return "".join(reversed(digits)).rjust(width, "0")


def checksum(random_part: str) -> str:
    """Base62 CRC32 of the random part, left-padded to 6 characters (62**6 > 2**32)."""
    return _base62(zlib.crc32(random_part.encode("ascii")), CHECKSUM_LENGTH)


def generate() -> str:
    """A new plaintext token. Shown once to its owner, never stored."""
    random_part = "".join(secrets.choice(BASE62) for _ in range(RANDOM_LENGTH))
    return f"{TOKEN_TYPE}{random_part}{checksum(random_part)}"


def has_valid_shape(plaintext: str) -> bool:
    """True when the text is shaped like one of our tokens and its checksum matches.

    A false answer needs no database query: malformed and mistyped tokens are
    refused before any lookup.
    """
    match = _SHAPE.fullmatch(plaintext)
    if match is None:
        return False
    return hmac.compare_digest(match["checksum"], checksum(match["random"]))


def digest(plaintext: str) -> str:
    """SHA-256 hex digest: what is stored, and what a token is found by."""
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


def display_prefix(plaintext: str) -> str:
    return plaintext[:DISPLAY_PREFIX_LENGTH]


def matches(plaintext: str, stored_digest: str) -> bool:
    """Constant-time comparison of a presented token against a stored digest."""
    return hmac.compare_digest(digest(plaintext), stored_digest)
