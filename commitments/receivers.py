"""The one signal commitments listens to: an address was proved (an auth
event, sent by accounts), so the commitments waiting for it are attached. A
signal because accounts is below commitments and may not import it
(docs/architecture.md, "Signals")."""

from __future__ import annotations

from django.dispatch import receiver

from accounts.signals import email_verified
from commitments.services import commitment_invitations_claim


@receiver(email_verified)
def attach_invited_commitments(sender, user, **kwargs) -> None:
    commitment_invitations_claim(user=user)
