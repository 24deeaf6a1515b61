"""POST /api/v1/hooks/<hookId>: where a tracker connection's tracker sends its
webhooks.

Order: the connection named by the URL, then its tracker's signature over the
raw body, computed as the body is read (`trackers.wire`: up to 25 MiB, spooled
to a temporary file past 1 MiB; GitLab's token before a byte is read),
constant time, before the body is parsed; its freshness once it is (Linear's
timestamp): each as the tracker's class says (`trackers.kinds`):
anything wrong is `401 unauthorized` in the envelope and writes nothing.
Then the body is decoded (JSON, or GitHub's `payload=` form) and
`services.tracker_delivery_receive` does what it says, once per delivery id
and once per body. An authentic delivery is always answered 2xx (trackers
retry or disable a hook on errors): 200 when commitments changed, 202 when
nothing was done (an unmapped person, an event we do not use, a redelivery, a
replayed body, a body over the limit), with what was done and why.
"""

from __future__ import annotations

from django.utils import timezone
from rest_framework import status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from lib.api_errors import ApiError
from lib.json_api import JsonOnlyNegotiation
from lib.request_body import Unreadable
from trackers import payloads, selectors, services, wire
from trackers.api_docs import HookResultSerializer, hook_schema
from trackers.kinds import tracker_for
from trackers.outcomes import Receipt

NOT_AUTHENTIC = (
    "The delivery is not signed with this connection's secret (or the address is not a "
    "connection's)."
)


def _unauthorized(message: str = NOT_AUTHENTIC) -> ApiError:
    return ApiError(message, error="unauthorized", status_code=401)


class HookView(APIView):
    authentication_classes: list = []
    permission_classes: list = []
    parser_classes: list = []  # the body is read raw, verified, then parsed here
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonOnlyNegotiation

    @hook_schema
    def post(self, request: Request, hook_id: str) -> Response:
        connection = selectors.connection_for_hook(hook_id=hook_id)
        if connection is None or not connection.owner.is_active:
            raise _unauthorized()
        tracker = tracker_for(connection.kind)
        check = tracker.signature_check(secret=connection.secret, headers=request.headers)
        if not check.needs_body and not check.authentic():
            raise _unauthorized()
        try:
            body = wire.read_body(request._request, check)
        except Unreadable as exc:
            raise ApiError(str(exc), error="invalid_payload", status_code=400) from None
        try:
            if not body.complete and check.needs_body:
                # Larger than any tracker sends, and not read: nothing can say
                # it is authentic.
                raise ApiError(
                    wire.too_large_summary(body), error="payload_too_large", status_code=413
                )
            if not check.authentic():
                raise _unauthorized()
            delivery_id = tracker.delivery_id(headers=request.headers, body_sha256=body.sha256)
            if not body.kept:
                receipt = services.tracker_delivery_receive(
                    connection=connection,
                    delivery_id=delivery_id,
                    body_sha256=body.sha256,
                    change=None,
                    unread=wire.too_large_summary(body),
                )
                return _answer(receipt)
            decoded = wire.decode(body.read(), request.content_type or "")
        finally:
            body.close()
        data, change, why = decoded.data, None, decoded.why
        if not tracker.fresh(data, now=timezone.now()):
            raise _unauthorized(tracker.stale)
        if data is not None:
            try:
                change = tracker.change(request.headers, data)
            except payloads.NotAnIssueEvent as exc:
                why = str(exc)
        receipt = services.tracker_delivery_receive(
            connection=connection,
            delivery_id=delivery_id,
            body_sha256=body.sha256,
            change=change,
            why=why,
        )
        return _answer(receipt)


def _answer(receipt: Receipt) -> Response:
    answer = HookResultSerializer(
        {
            "changed": receipt.changed,
            "redelivery": receipt.redelivery,
            "event": receipt.event,
            "externalId": receipt.external_id,
            "summary": receipt.summary,
            "actions": receipt.actions_json(),
        }
    ).data
    code = status.HTTP_200_OK if receipt.changed else status.HTTP_202_ACCEPTED
    return Response(answer, status=code)
