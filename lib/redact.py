"""A logging filter that blanks what looks like one of this service's secrets.

Defence in depth: no log line is meant to carry a secret (the `httpx` and
`httpcore` loggers, which print full request URLs, are kept at WARNING, and
the SQL log, which prints parameters such as session keys, at INFO), but a
line that does anyway, from our code or a library's, an exception message or
a traceback, is redacted before any handler writes it. It blanks secrets, not
everything near them, so the links in a nudge or an invitation that the quick
start's worker prints to its log stay links a newcomer can follow.
Recognised:

- API tokens (`svc_...`), webhook signing secrets (`whsec_...`), tracker
  connection secrets (`trk_...`), model keys (`sk-...`, `sk-ant-...`);
- `Bearer ...` credentials, `sessionid=` / `csrftoken=` cookie values, and
  `password=`-like values;
- a URL's user and password (`https://user:pw@host`);
- query-string values whose name says secret (`key`, `token`, `code`, `sig`,
  `signature`, `secret`, `password`, `auth`, ...);
- the one-time key in a path of this service's: e-mail confirmation
  (`/accounts/confirm-email/<key>/`, which verifies an address and may sign
  its owner in), password reset (`/accounts/password/reset/key/<key>/`), and
  a tracker connection's receiving URL (`/api/v1/hooks/<id>`), wherever they
  appear: in a link or a request log line's bare path;
- the path and query of every http(s) URL of another site (a Slack or Teams
  webhook URL, an outbound webhook's receiver: the path is often the secret):
  only the scheme and host are kept, as on the Notifications page. URLs on
  this service's own site (SITE_URL: the links in nudges and invitations)
  keep their path, less the secrets above.

To recognise a new kind of secret, add its pattern to SECRET_PATTERNS, with
the text every match of it holds (`needs`: a line holding none of any
pattern's is not scanned, which keeps the access log cheap); a new path of
ours that carries a secret, to SECRET_PATHS.
"""

from __future__ import annotations

import logging
import re
from typing import NamedTuple
from urllib.parse import urlsplit

REDACTED = "[redacted]"

# Paths of this service whose last part is a secret (a one-time key, a
# receiving URL's id): the part after the prefix is blanked, in a full URL or
# a bare path.
SECRET_PATHS = (
    "/accounts/confirm-email/",
    "/accounts/password/reset/key/",
    "/api/v1/hooks/",
)
SECRET_QUERY_NAMES = (
    r"[\w.-]*(?:key|token|code|sig|signature|secret|password|passwd|auth|session)[\w.-]*"
)


class SecretPattern(NamedTuple):
    pattern: re.Pattern[str]
    replacement: str
    # Text that every match contains (one of these, in lower case): a text
    # that holds none of any pattern's is returned as it is, unscanned, which
    # is most lines (an access log line, a task's name).
    needs: tuple[str, ...]


SECRET_PATTERNS: list[SecretPattern] = [
    SecretPattern(re.compile(r"\bsvc_[A-Za-z0-9]{8,}"), "svc_" + REDACTED, ("svc_",)),
    SecretPattern(re.compile(r"\bwhsec_[A-Za-z0-9+/=_-]{8,}"), "whsec_" + REDACTED, ("whsec_",)),
    SecretPattern(re.compile(r"\btrk_[0-9a-f]{8,}"), "trk_" + REDACTED, ("trk_",)),
    SecretPattern(re.compile(r"\bsk-ant-[A-Za-z0-9_-]{8,}"), "sk-ant-" + REDACTED, ("sk-ant-",)),
    SecretPattern(re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), "sk-" + REDACTED, ("sk-",)),
    SecretPattern(re.compile(r"(?i)\b(bearer)\s+[^\s'\",;]+"), r"\1 " + REDACTED, ("bearer",)),
    SecretPattern(
        re.compile(r"(?i)\b(sessionid|csrftoken)=[^\s;'\",&]+"),
        r"\1=" + REDACTED,
        ("sessionid=", "csrftoken="),
    ),
    SecretPattern(
        re.compile(r"(?i)\b(password|passwd|pwd)=[^\s;'\",&]+"),
        r"\1=" + REDACTED,
        ("password=", "passwd=", "pwd="),
    ),
    SecretPattern(
        re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@'\"<>]+@"),
        r"\1" + REDACTED + "@",
        ("://",),
    ),
    SecretPattern(
        re.compile(rf"(?i)([?&]{SECRET_QUERY_NAMES}=)[^&#\s'\"<>]+"),
        r"\1" + REDACTED,
        ("?", "&"),
    ),
    *(
        SecretPattern(
            re.compile(f"({re.escape(prefix)})[^/\\s'\"?#<>]+"),
            r"\1" + REDACTED,
            (prefix.lower(),),
        )
        for prefix in SECRET_PATHS
    ),
]
# Every text any pattern above (or a URL, below: "://") can change holds one of these.
_NEEDS = tuple(dict.fromkeys(need for secret in SECRET_PATTERNS for need in secret.needs))


def may_hold_a_secret(text: str) -> bool:
    lowered = text.lower()
    return any(need in lowered for need in _NEEDS)


# scheme://host[:port], then the path, query and fragment if any.
_URL = re.compile(r"(?i)\b(https?://[^\s/?#'\"<>]+)([/?#][^\s'\"<>]*)?")


def _own_origins() -> frozenset[str]:
    """SITE_URL's scheme://host[:port], lower-case; none when the settings are
    not loaded (gunicorn's own lines before the application is): then every
    URL's path is blanked, as for another site."""
    from django.conf import settings

    # Never load the settings from inside a log call; once loaded, read them.
    if not settings.configured:
        return frozenset()
    try:
        site = urlsplit(settings.SITE_URL)
    except Exception:  # no SITE_URL (other settings): treat every site as another's
        return frozenset()
    return frozenset({f"{site.scheme}://{site.netloc}".lower()}) if site.netloc else frozenset()


def _url(match: re.Match[str], own: frozenset[str]) -> str:
    origin, rest = match.group(1), match.group(2)
    if not rest or origin.lower() in own:
        return match.group(0)
    return origin + "/" + REDACTED


def redact(text: str) -> str:
    if not may_hold_a_secret(text):
        return text
    for pattern, replacement, _ in SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    if "://" in text:
        own = _own_origins()
        text = _URL.sub(lambda match: _url(match, own), text)
    return text


class RedactSecretsFilter(logging.Filter):
    """Rewrite a record's message (and its traceback) with secrets blanked.
    Attach it to handlers, so it sees records from every logger."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler's error path
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
