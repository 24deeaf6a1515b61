"""One signed POST of a webhook delivery's frozen body (lib.outbound.post:
the one guard, the address checked at send time, no redirects), under
WEBHOOK_TIMEOUT for the whole attempt, keeping the first KiB of the answer."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from django.conf import settings

from lib import outbound
from webhooks.models import EXCERPT_BYTES
from webhooks.signing import signed_headers

log = logging.getLogger(__name__)

RETRY_AFTER_STATUSES = (429, 503)
HOST_REFUSED = (
    "Not sent: the URL's host name did not resolve, in time, to public internet addresses "
    "only (the detail is in the service's log)."
)


@dataclass(frozen=True)
class Outcome:
    delivered: bool
    status_code: int | None = None
    response_excerpt: str = ""
    error: str = ""
    gone: bool = False
    retry_after: float | None = None


def webhook_post(
    *, delivery_id, event_name: str, url: str, secrets: list[str], body: bytes, now: dt.datetime
) -> Outcome:
    headers = signed_headers(
        secrets=secrets,
        delivery_id=str(delivery_id),
        event_name=event_name,
        timestamp=int(now.timestamp()),
        body=body,
    )
    timeout = float(settings.WEBHOOK_TIMEOUT)
    try:
        response = outbound.post(
            url,
            content=body,
            headers=headers,
            timeout=timeout,
            deadline=timeout,  # the whole attempt, not each phase
            max_bytes=EXCERPT_BYTES,
        )
    except (outbound.AddressRefused, outbound.ResolutionFailed) as exc:
        # Where the name leads stays in the log: the page would tell its
        # owner how this service's internal names resolve.
        log.warning("Webhook delivery %s not sent: %s", delivery_id, exc.message)
        return Outcome(delivered=False, error=HOST_REFUSED)
    except (outbound.OutboundRefused, outbound.OutboundFailed) as exc:
        return Outcome(delivered=False, error=exc.message)
    text = response.content[:EXCERPT_BYTES].decode("utf-8", errors="replace")
    code = response.status_code
    if 200 <= code < 300:
        return Outcome(delivered=True, status_code=code, response_excerpt=text)
    return Outcome(
        delivered=False,
        status_code=code,
        response_excerpt=text,
        error=f"The receiver answered {code}.",
        gone=code == 410,
        retry_after=response.retry_after if code in RETRY_AFTER_STATUSES else None,
    )
