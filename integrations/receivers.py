"""A changed password or e-mail address ends every API token of that person.

A token minted before the change (by someone who had the password, or who had
claimed the address) must not outlive it. `accounts.signals.credentials_changed`
is sent for every such change, however it was made (allauth's pages, Django
admin, `manage.py changepassword`); allauth's pages show the returned sentence.
A signal, not a call, because accounts is below integrations and may not import
it, and `User.save()` is the one place every path passes (docs/architecture.md,
"Signals").
"""

from __future__ import annotations

from django.dispatch import receiver

from accounts.signals import credentials_changed
from audit.services import Actor
from integrations import services

REASONS = {"password": "password_changed", "email": "email_changed"}
WHY = {"password": "your password changed", "email": "your e-mail address changed"}


@receiver(credentials_changed)
def revoke_api_tokens(sender, user, change: str, **kwargs) -> str | None:
    revoked = services.api_tokens_revoke_all(
        user=user, actor=Actor.system(), reason=REASONS[change]
    )
    if not revoked:
        return None
    tokens = "API token was" if revoked == 1 else f"{revoked} API tokens were"
    return (
        f"Your {tokens} revoked because {WHY[change]}: requests with them are refused "
        "from now on. Mint new ones on Settings, API Tokens."
    )
