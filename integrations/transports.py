"""How a message leaves the machine: one class per channel, in one module.

`Transport(destination).notify(message)` sends, or raises `TransportError`,
whose `permanent` says whether trying again can help. A permanent error (the
webhook URL is gone, the address is refused) stops retries and marks the
channel broken; anything else is retried with back-off by the outbox.

HTTP transports use a timeout on every phase, never follow redirects and, in
production, refuse plain HTTP and private, loopback and link-local addresses,
judged on the address actually connected to (the name is resolved once and the
connection pinned to it, so DNS cannot change the answer in between).
"""

from __future__ import annotations

import ipaddress
import smtplib
import socket
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.mail import EmailMessage

from integrations.models import ChannelKind

ERROR_EXCERPT = 300


@dataclass(frozen=True)
class Message:
    """What to say: a headline, a few plain sentences and a link."""

    subject: str
    text: str
    url: str
    # Stable across retries of one delivery, so a duplicate can be recognised
    # (e-mail Message-ID); None for one-off messages such as a test.
    idempotency_key: str | None = None


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


def excerpt(text: str, limit: int = ERROR_EXCERPT) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Transport:
    kind: ClassVar[str]

    def __init__(self, destination: str) -> None:
        # An e-mail address or a webhook URL, depending on the kind.
        self.destination = destination

    def notify(self, message: Message) -> int | None:
        """Send `message`; return the HTTP status when there is one."""
        raise NotImplementedError


# --- e-mail ----------------------------------------------------------------------


class EmailTransport(Transport):
    kind = ChannelKind.EMAIL

    def notify(self, message: Message) -> int | None:
        if not self.destination:
            raise TransportError("The recipient has no e-mail address.", permanent=True)
        headers = {}
        if message.idempotency_key:
            domain = urlsplit(settings.SITE_URL).hostname or "localhost"
            headers["Message-ID"] = f"<{message.idempotency_key}@{domain}>"
        email = EmailMessage(
            subject=message.subject,
            body=f"{message.text}\n\n{message.url}\n",
            to=[self.destination],
            headers=headers,
        )
        try:
            email.send(fail_silently=False)
        except smtplib.SMTPRecipientsRefused as exc:
            raise TransportError(
                f"The mail server refused the address: {exc}", permanent=True
            ) from exc
        except (smtplib.SMTPException, OSError) as exc:
            # Includes a mail server that is down or misconfigured: an operator
            # can fix that, so the delivery waits and retries.
            raise TransportError(excerpt(f"Sending mail failed: {exc!r}")) from exc
        return None


# --- HTTP ------------------------------------------------------------------------


def _address_is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check_url(url: str) -> None:
    """Raise TransportError(permanent) for a URL this service will not call."""
    parts = urlsplit(url)
    allow_private = settings.OUTBOUND_ALLOW_PRIVATE
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise TransportError("The webhook URL is not an http(s) URL.", permanent=True)
    if parts.scheme != "https" and not allow_private:
        raise TransportError("The webhook URL must use https.", permanent=True)


class HttpTransport(Transport):
    """POSTs JSON to a webhook URL; subclasses build the body and read the answer."""

    def payload(self, message: Message) -> dict[str, Any]:
        raise NotImplementedError

    def check_response(self, response: httpx.Response) -> None:
        """Raise TransportError unless `response` means the message was taken."""
        raise NotImplementedError

    def notify(self, message: Message) -> int | None:
        response = self.post_json(self.destination, self.payload(message))
        if response.is_redirect:
            raise TransportError(
                f"The webhook answered {response.status_code} with a redirect, which is "
                "not followed; save the channel's current URL.",
                permanent=True,
                status_code=response.status_code,
            )
        self.check_response(response)
        return response.status_code

    @staticmethod
    def _pinned(url: str) -> tuple[str, dict[str, str], dict[str, Any]]:
        """The URL rewritten to one resolved public address, with the Host header
        and TLS server name of the original, so the check and the connection
        see the same address."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise TransportError(f"Cannot resolve {host}: {exc}") from exc
        addresses = [info[4][0] for info in infos]
        if not addresses or not all(_address_is_public(a) for a in addresses):
            raise TransportError(
                f"{host} resolves to a private, loopback or link-local address.", permanent=True
            )
        ip = ipaddress.ip_address(addresses[0])
        ip_host = f"[{ip}]" if ip.version == 6 else str(ip)
        netloc = ip_host if parts.port is None else f"{ip_host}:{parts.port}"
        pinned = parts._replace(netloc=netloc).geturl()
        host_header = host if parts.port is None else f"{host}:{parts.port}"
        extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
        return pinned, {"Host": host_header}, extensions

    def post_json(self, url: str, body: dict[str, Any]) -> httpx.Response:
        check_url(url)
        headers = {"User-Agent": "commitments-nudge/1.0"}
        extensions: dict[str, Any] = {}
        if not settings.OUTBOUND_ALLOW_PRIVATE:
            url, host_header, extensions = self._pinned(url)
            headers.update(host_header)
        timeout = httpx.Timeout(settings.NOTIFY_HTTP_TIMEOUT)
        try:
            with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
                return client.post(url, json=body, headers=headers, extensions=extensions)
        except httpx.TimeoutException as exc:
            raise TransportError(
                f"No answer within {settings.NOTIFY_HTTP_TIMEOUT} s ({type(exc).__name__})."
            ) from exc
        except httpx.HTTPError as exc:
            raise TransportError(excerpt(f"Connection failed: {exc!r}")) from exc


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None


class SlackTransport(HttpTransport):
    """Slack incoming webhook. Answers 200 "ok"; an error names itself in the
    body (`no_service`, `channel_is_archived`, `invalid_token`, ...)."""

    kind = ChannelKind.SLACK

    @staticmethod
    def escape(text: str) -> str:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    def payload(self, message: Message) -> dict[str, Any]:
        return {
            "text": (
                f"*{self.escape(message.subject)}*\n{self.escape(message.text)}\n"
                f"<{message.url}|Open the commitment>"
            ),
            "unfurl_links": False,
        }

    def check_response(self, response: httpx.Response) -> None:
        code = response.status_code
        if 200 <= code < 300:
            return
        said = excerpt(response.text) or "no body"
        if code == 429 or code >= 500:
            raise TransportError(
                f"Slack answered {code} {said}",
                status_code=code,
                retry_after=_retry_after(response),
            )
        raise TransportError(f"Slack answered {code} {said}", permanent=True, status_code=code)


class TeamsTransport(HttpTransport):
    """Microsoft Teams workflow webhook (Power Automate "When a Teams webhook
    request is received"): an Adaptive Card in a message; answers 202."""

    kind = ChannelKind.TEAMS

    def payload(self, message: Message) -> dict[str, Any]:
        card = {
            "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
            "type": "AdaptiveCard",
            "version": "1.4",
            "body": [
                {
                    "type": "TextBlock",
                    "text": message.subject,
                    "weight": "Bolder",
                    "size": "Medium",
                    "wrap": True,
                },
                {"type": "TextBlock", "text": message.text, "wrap": True},
            ],
            "actions": [
                {"type": "Action.OpenUrl", "title": "Open the commitment", "url": message.url}
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

    def check_response(self, response: httpx.Response) -> None:
        code = response.status_code
        if 200 <= code < 300:
            return
        said = excerpt(response.text) or "no body"
        if code in (408, 429) or code >= 500:
            raise TransportError(
                f"Teams answered {code} {said}",
                status_code=code,
                retry_after=_retry_after(response),
            )
        raise TransportError(f"Teams answered {code} {said}", permanent=True, status_code=code)


TRANSPORTS: dict[str, type[Transport]] = {
    ChannelKind.EMAIL: EmailTransport,
    ChannelKind.SLACK: SlackTransport,
    ChannelKind.TEAMS: TeamsTransport,
}


def transport_for(kind: str, destination: str) -> Transport:
    return TRANSPORTS[kind](destination)
