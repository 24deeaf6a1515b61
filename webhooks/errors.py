"""What the webhook services refuse, with a message fit for a form."""

from __future__ import annotations


class WebhookError(Exception):
    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field  # the form field it is about, when there is one


class WebhookUrlRefused(WebhookError):
    """The URL is not one this service will send to (lib.outbound's rules)."""


class WebhookEndpointExists(WebhookError):
    """The user already has an endpoint for that external system."""


class WebhookEndpointPaused(WebhookError):
    """Nothing is sent to a paused endpoint; resume it first."""


class WebhookNotReplayable(WebhookError):
    """Only a permanently failed delivery can be replayed."""


class WebhookEndpointLimit(WebhookError):
    """The user has WEBHOOK_MAX_ENDPOINTS endpoints already."""


class WebhookTestTooSoon(WebhookError):
    """The user sent a test less than WEBHOOK_TEST_INTERVAL seconds ago."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"You sent a test a moment ago. Try again in {retry_after} s.")
        self.retry_after = retry_after
