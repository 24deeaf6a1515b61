"""Models of the integrations app, one module per room:
tokens (API tokens) and notifications (channels, deliveries, attempts)."""

from integrations.models.notifications import *  # noqa: F403
from integrations.models.tokens import *  # noqa: F403
