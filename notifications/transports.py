"""How a message leaves the machine: one class per channel, in one module.

`Transport(destination).notify(message)` sends, or raises `TransportError`,
whose `permanent` says whether trying again can help. A permanent error (the
chat URL is gone, the address is refused) stops retries and marks the
channel broken; anything else is retried with back-off by the outbox.

HTTP transports send through `lib.outbound`, which holds the rules of where
this service may send (https only, a checked resolved address, no redirects,
timeouts, a capped answer). Any answer but 408, 429 and 5xx is permanent.
"""

from __future__ import annotations

import contextlib
import smtplib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.core.mail.backends.base import BaseEmailBackend

from lib import outbound
from lib.text import excerpt, one_line, wrapped_for_mail
from notifications.models import ChannelKind


@dataclass(frozen=True)
class Action:
    """A link a message offers besides its own (`url`): its words and where
    it goes (a handshake request's Accept, Decline, Propose another date)."""

    label: str
    url: str


@dataclass(frozen=True)
class Message:
    """What to say: a headline, a few plain sentences and a link.

    The subject is made of what people typed (names, descriptions), and it
    is a mail header and a heading: it is always one line (`one_line`:
    control characters and line breaks become spaces), so no name or
    description can end the header early and make the mail unsendable
    (BadHeaderError) or add headers of its own. The text is plain text:
    each transport escapes what its channel would read as markup."""

    subject: str
    text: str
    url: str
    # Stable across retries of one delivery, so a duplicate can be recognised
    # (e-mail Message-ID); None for one-off messages such as a test.
    idempotency_key: str | None = None
    # Links to offer before `url`, each as its channel shows a link.
    actions: tuple[Action, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "subject", one_line(self.subject))


class TransportError(Exception):
    def __init__(
        self,
        message: str,
        *,
        permanent: bool = False,
        status_code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.status_code = status_code
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message


class Transport:
    kind: ClassVar[str]

    def __init__(self, destination: str) -> None:
        # An e-mail address or a chat URL, depending on the kind.
        self.destination = destination

    def notify(self, message: Message) -> int | None:
        """Send `message`; return the HTTP status when there is one."""
        raise NotImplementedError


# --- e-mail ----------------------------------------------------------------------


def _action_lines(message: Message) -> str:
    """A message's actions in a plain-text mail: each label, then its link on
    a line of its own (never wrapped, so a mail program links it whole)."""
    return "".join(f"{action.label}:\n{action.url}\n\n" for action in message.actions)


_session = threading.local()


@contextlib.contextmanager
def mail_session() -> Iterator[None]:
    """Within (in this thread): e-mail goes over one connection to the mail
    server, opened by the first message and closed at the end; a message
    that fails closes it, and the next opens a fresh one. A batch of nudges
    pays for one connection (and TLS handshake and login), not one each."""
    _session.active, _session.connection = True, None
    try:
        yield
    finally:
        _drop_session_connection()
        _session.active = False


def _session_connection() -> BaseEmailBackend | None:
    """The session's open connection (opened now if needed), or None outside
    a session (then each message opens and closes its own)."""
    if not getattr(_session, "active", False):
        return None
    if _session.connection is None:
        connection = get_connection(fail_silently=False)
        # Opened here, so that send_messages() leaves it open after a message.
        connection.open()
        _session.connection = connection
    connection_: BaseEmailBackend = _session.connection
    return connection_


def _drop_session_connection() -> None:
    connection, _session.connection = getattr(_session, "connection", None), None
    if connection is not None:
        with contextlib.suppress(Exception):
            connection.close()


class EmailTransport(Transport):
    kind = ChannelKind.EMAIL

    def notify(self, message: Message) -> int | None:
        if not self.destination:
            raise TransportError("The recipient has no e-mail address.", permanent=True)
        headers = {}
        if message.idempotency_key:
            domain = urlsplit(settings.SITE_URL).hostname or "localhost"
            headers["Message-ID"] = f"<{message.idempotency_key}@{domain}>"
        try:
            email = EmailMessage(
                subject=message.subject,
                body=wrapped_for_mail(f"{message.text}\n\n{_action_lines(message)}{message.url}\n"),
                to=[self.destination],
                headers=headers,
                connection=_session_connection(),
            )
            email.send(fail_silently=False)
        except ValueError as exc:
            # The message cannot be written as mail: a header that would span
            # lines (BadHeaderError; the subject is one line, so an address)
            # or an address that does not parse. The same message fails the
            # same way every time, so it is not retried. (Nothing was said to
            # the server: a session's connection stays usable.)
            raise TransportError(
                excerpt(f"The message could not be written as mail: {exc}"), permanent=True
            ) from exc
        except smtplib.SMTPRecipientsRefused as exc:
            # smtplib reset the transaction: the connection stays usable.
            raise TransportError(
                f"The mail server refused the address: {exc}", permanent=True
            ) from exc
        except (smtplib.SMTPException, OSError) as exc:
            # Includes a mail server that is down or misconfigured: an operator
            # can fix that, so the delivery waits and retries.
            _drop_session_connection()
            raise TransportError(excerpt(f"Sending mail failed: {exc!r}")) from exc
        except Exception:
            _drop_session_connection()
            raise
        return None


# --- HTTP ------------------------------------------------------------------------


class HttpTransport(Transport):
    """POSTs JSON to a chat URL through `lib.outbound` (https only, checked
    resolved address, no redirects, timeouts, capped answer); subclasses build
    the body."""

    service: ClassVar[str]  # how messages name the other side

    def payload(self, message: Message) -> dict[str, Any]:
        raise NotImplementedError

    def notify(self, message: Message) -> int | None:
        try:
            response = outbound.post(
                self.destination, json=self.payload(message), timeout=settings.NOTIFY_HTTP_TIMEOUT
            )
        except outbound.OutboundRefused as exc:
            raise TransportError(exc.message, permanent=True) from exc
        except outbound.OutboundFailed as exc:
            raise TransportError(exc.message) from exc
        code = response.status_code
        if response.is_redirect:
            raise TransportError(
                f"The chat URL answered {code} with a redirect, which is not followed; "
                "save the channel's current URL.",
                permanent=True,
                status_code=code,
            )
        if 200 <= code < 300:
            return code
        said = excerpt(response.text) or "no body"
        raise TransportError(
            f"{self.service} answered {code} {said}",
            permanent=not outbound.is_retryable_status(code),
            status_code=code,
            retry_after=response.retry_after,
        )


class SlackTransport(HttpTransport):
    """Slack incoming webhook. Answers 200 "ok"; an error names itself in the
    body (`no_service`, `channel_is_archived`, `invalid_token`, ...)."""

    kind = ChannelKind.SLACK
    service = "Slack"

    @staticmethod
    def escape(text: str) -> str:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    def payload(self, message: Message) -> dict[str, Any]:
        return {
            "text": (
                f"*{self.escape(message.subject)}*\n{self.escape(message.text)}\n"
                + "".join(f"<{a.url}|{self.escape(a.label)}> · " for a in message.actions)
                + f"<{message.url}|Open the commitment>"
            ),
            "unfurl_links": False,
        }


class TeamsTransport(HttpTransport):
    """Microsoft Teams workflow webhook (Power Automate "When a Teams webhook
    request is received"): an Adaptive Card in a message; answers 202.

    The words are people's (names, descriptions), so none of them is read as
    markup: a TextBlock's text is Markdown (`[Re-enter your password](url)`
    would be a link, `**` bold), and Adaptive Cards have no escape for it.
    Every line goes in a RichTextBlock's TextRun instead, which the schema
    shows as plain text (no Markdown, since card version 1.2); the one link is
    the card's own action."""

    kind = ChannelKind.TEAMS
    service = "Teams"

    @staticmethod
    def plain(text: str, **style: str) -> dict[str, Any]:
        """One paragraph of plain text (a RichTextBlock of one TextRun)."""
        return {"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": text, **style}]}

    def payload(self, message: Message) -> dict[str, Any]:
        lines = [line for line in message.text.splitlines() if line.strip()]
        card = {
            "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
            "type": "AdaptiveCard",
            "version": "1.4",
            "body": [
                self.plain(message.subject, weight="Bolder", size="Medium"),
                *(self.plain(line) for line in lines),
            ],
            "actions": [
                *(
                    {"type": "Action.OpenUrl", "title": action.label, "url": action.url}
                    for action in message.actions
                ),
                {"type": "Action.OpenUrl", "title": "Open the commitment", "url": message.url},
            ],
        }
        return {
            "type": "message",
            "attachments": [
                {
                    "contentType": "application/vnd.microsoft.card.adaptive",
                    "contentUrl": None,
                    "content": card,
                },
            ],
        }


TRANSPORTS: dict[str, type[Transport]] = {
    ChannelKind.EMAIL: EmailTransport,
    ChannelKind.SLACK: SlackTransport,
    ChannelKind.TEAMS: TeamsTransport,
}


def transport_for(kind: str, destination: str) -> Transport:
    return TRANSPORTS[kind](destination)
