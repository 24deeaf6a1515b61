"""Reading what allauth mails to prove an address: the code (allauth's
verification by code, in the format of allauth's USER_CODE_FORMAT: two groups
of four letters) and every link, to open them as a mail gateway or a curious
reader would."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# allauth's alphabet for codes (RFC 8628's: no vowels, no look-alikes).
CODE = re.compile(r"^([BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4})$", re.MULTILINE)
LINK = re.compile(r"https?://[^\s<>\"']+")

CODE_PAGE = "/accounts/confirm-email/"


def mailed_codes(message) -> list[str]:
    """The verification codes in `message` (each on a line of its own)."""
    return CODE.findall(message.body)


def code_in(text: str) -> str:
    """The one verification code in `text` (a mail's body, a console's output)."""
    (code,) = CODE.findall(text)
    return code


def mailed_code(message) -> str:
    return code_in(message.body)


def mailed_paths(message) -> list[str]:
    """The path (and query) of every link in `message`, for a test client."""
    paths = []
    for url in LINK.findall(message.body):
        bits = urlsplit(url.rstrip(".,)"))
        paths.append((bits.path or "/") + (f"?{bits.query}" if bits.query else ""))
    return paths


def mails_to(mailbox, address: str) -> list:
    return [message for message in mailbox if message.to == [address]]
