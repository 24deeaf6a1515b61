"""Deep links: a commitment's external reference (`externalSystem` +
`externalId`) as a link into the system it came from, through a URL template
each person sets per system in Settings (`LinkTemplate`).

The rules a template must follow and the link it makes for one external id
(pure functions), and the writes of a person's templates (adding one,
deleting one: each one transaction with its audit row). The reads are in
commitments.selectors (`link_template_list`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction

from audit.models import AuditAction
from audit.services import Actor, audit_event_record
from commitments.errors import LinkTemplateInvalid
from commitments.models import (
    EXTERNAL_ID_PLACEHOLDER,
    EXTERNAL_SYSTEM_MAX,
    LINK_TEMPLATE_MAX,
    LinkTemplate,
)
from lib.outbound import is_loopback_host
from lib.text import strip_blank

if TYPE_CHECKING:
    from accounts.models import User


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


@transaction.atomic
def link_template_add(*, owner: User, system: str, template: str) -> LinkTemplate:
    """Add `owner`'s deep-link template for `system` (one per system). Raises
    LinkTemplateInvalid, and stores nothing, when a rule of
    `commitments.links` refuses it or the system has one already."""
    system = strip_blank(system or "")
    template = strip_blank(template or "")
    if not system or len(system) > EXTERNAL_SYSTEM_MAX:
        raise LinkTemplateInvalid(
            field="system",
            message=f"Enter the externalSystem, 1 to {EXTERNAL_SYSTEM_MAX} characters.",
        )
    problem = link_template_problem(template)
    if problem:
        raise LinkTemplateInvalid(field="template", message=problem)
    duplicate = LinkTemplateInvalid(
        field="system",
        message=f"You have a link for “{system}” already: delete it first to replace it.",
    )
    if LinkTemplate.objects.filter(owner=owner, system=system).exists():
        raise duplicate
    try:
        with transaction.atomic():
            link = LinkTemplate.objects.create(owner=owner, system=system, template=template)
    except IntegrityError:  # the same form posted twice at once
        raise duplicate from None
    audit_event_record(
        actor=Actor.for_user(owner),
        subject=owner,
        action=AuditAction.LINK_TEMPLATE_ADDED,
        payload={"system": system, "template": template},
    )
    return link


@transaction.atomic
def link_template_delete(*, owner: User, link_id: int) -> bool:
    """Delete one of `owner`'s deep-link templates; False when there is no
    such template of theirs (already deleted, or someone else's)."""
    link = LinkTemplate.objects.select_for_update().filter(owner=owner, pk=link_id).first()
    if link is None:
        return False
    link.delete()
    audit_event_record(
        actor=Actor.for_user(owner),
        subject=owner,
        action=AuditAction.LINK_TEMPLATE_DELETED,
        payload={"system": link.system, "template": link.template},
    )
    return True
