"""Template filters about deadlines, for the pages that offer the handshake."""

from __future__ import annotations

from django import template
from django.utils import timezone

from commitments.models import Commitment, Status

register = template.Library()


@register.filter
def accept_counts_as_overdue(commitment: Commitment) -> bool:
    """Whether accepting `commitment` now makes it overdue at once: it waits
    for the handshake and its deadline has passed (accepted, it would be
    Active past its deadline, `commitments.models.overdue`, and count so in
    the Flow Score). Pages show `commitments/_overdue_accept_warning.html`
    next to Accept; the accept action itself is unchanged."""
    return (
        commitment.status == Status.PENDING_HANDSHAKE
        and commitment.deadline is not None
        and commitment.deadline < timezone.now()
    )
