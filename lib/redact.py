"""A logging filter that blanks what looks like one of this service's secrets.

Defence in depth: no log line is meant to carry a secret (the `httpx` and
`httpcore` loggers, which print full request URLs, are kept at WARNING, and
the SQL log, which prints parameters such as session keys, at INFO), but a
line that does anyway, from our code or a library's, an exception message or
a traceback, is redacted before any handler writes it. Recognised:

- API tokens (`svc_...`), webhook signing secrets (`whsec_...`), tracker
  connection secrets (`trk_...`), provider
  keys (`sk-...`, `sk-ant-...`);
- `Bearer ...` credentials, and `sessionid=` / `csrftoken=` cookie values;
- the path and query of every http(s) URL (a Slack or Teams webhook URL is a
  secret in its path): only the scheme and host are kept, as on the
  Notifications page;
- the key in a password-reset or e-mail confirmation path
  (`/accounts/password/reset/key/...`, `/accounts/confirm-email/...`), as a
  request log line shows it.

To recognise a new kind of secret, add its pattern to SECRET_PATTERNS.
"""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"

SECRET_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bsvc_[A-Za-z0-9]{8,}"), "svc_" + REDACTED),
    (re.compile(r"\bwhsec_[A-Za-z0-9+/=_-]{8,}"), "whsec_" + REDACTED),
    (re.compile(r"\btrk_[0-9a-f]{8,}"), "trk_" + REDACTED),
    (re.compile(r"\bsk-ant-[A-Za-z0-9_-]{8,}"), "sk-ant-" + REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), "sk-" + REDACTED),
    (re.compile(r"(?i)\b(bearer)\s+[^\s'\",;]+"), r"\1 " + REDACTED),
    (re.compile(r"(?i)\b(sessionid|csrftoken)=[^\s;'\",&]+"), r"\1=" + REDACTED),
    (re.compile(r"(/accounts/password/reset/key/)[^/\s'\"?]+"), r"\1" + REDACTED),
    (re.compile(r"(/accounts/confirm-email/)[^/\s'\"?]+"), r"\1" + REDACTED),
    # scheme://host[:port] kept; path, query and fragment dropped.
    (
        re.compile(r"(?i)\b(https?://[^\s/?#'\"<>]+)[/?#][^\s'\"<>]*"),
        r"\1/" + REDACTED,
    ),
]


def redact(text: str) -> str:
    for pattern, replacement in SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
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
