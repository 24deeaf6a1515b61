"""Deep links: a commitment's external reference (`externalSystem` +
`externalId`) as a link into the system it came from, through a URL template
each person sets per system in Settings (`LinkTemplate`).

Pure functions, no database: the rules a template must follow, and the link
it makes for one external id. The reads and writes are in selectors and
services (`link_template_*`).
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from django.conf import settings

from commitments.models import EXTERNAL_ID_PLACEHOLDER, LINK_TEMPLATE_MAX
from lib.outbound import is_loopback_host


def link_template_problem(template: str) -> str | None:
    """Why `template` cannot be a deep-link template, or None when it can.

    It must be an absolute https:// URL (http:// only to a loopback host, and
    only in development: DEBUG on, or a local site such as the quick start's,
    for a tracker on this machine) with `{externalId}`
    after the host, so the id can never choose where the link goes.
    """
    if not template:
        return "Enter a URL."
    if len(template) > LINK_TEMPLATE_MAX:
        return f"Keep it to {LINK_TEMPLATE_MAX} characters."
    if any(ch.isspace() for ch in template):
        return "A URL has no spaces."
    if EXTERNAL_ID_PLACEHOLDER not in template:
        return f"Put {EXTERNAL_ID_PLACEHOLDER} where the id goes, e.g. …/browse/{{externalId}}."
    try:
        parts = urlsplit(template)
        host = parts.hostname or ""
    except ValueError:
        return "That is not a URL."
    if parts.scheme == "http" and host and is_loopback_host(host):
        if not (settings.DEBUG or settings.LOCAL_SITE):
            return "Use https:// (http:// works only for a local address in development)."
    elif parts.scheme != "https":
        return "Use an https:// address."
    if not host:
        return "The URL needs a host, e.g. https://example.atlassian.net/browse/{externalId}."
    if EXTERNAL_ID_PLACEHOLDER in parts.netloc:
        return f"{EXTERNAL_ID_PLACEHOLDER} must come after the host, in the path or the query."
    return None


def deep_link(template: str, external_id: str) -> str:
    """The link for `external_id`: every `{externalId}` replaced by the id,
    URL-quoted (a `/`, `?`, `#` or space in an id stays part of the id)."""
    return template.replace(EXTERNAL_ID_PLACEHOLDER, quote(external_id, safe=""))
