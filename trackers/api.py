"""POST /api/v1/hooks/<hookId>: where a tracker connection's tracker sends its
webhooks.

Order: the connection named by the URL, then its tracker's signature over the
raw body (constant time, before the body is parsed; Linear's timestamp once it
is): anything wrong is `401 unauthorized` in the envelope and writes nothing.
Then the body is read and `services.tracker_delivery_receive` does what it
says, once per delivery id. An authentic delivery is always answered 2xx
(trackers retry or disable a hook on errors): 200 when commitments changed,
202 when nothing was done (an unmapped person, an event we do not use, a
redelivery), with what was done and why.
"""

from __future__ import annotations

import json

from django.utils import timezone
from rest_framework import status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from lib.api_errors import ApiError
from lib.json_api import JsonOnlyNegotiation
from trackers import payloads, selectors, services, signatures
from trackers.api_docs import HookResultSerializer, hook_schema

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
        body = request.body
        kind = connection.kind
        if not signatures.authentic(
            kind, secret=connection.secret, headers=request.headers, body=body
        ):
            raise _unauthorized()
        change, why = None, ""
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            data, why = None, "the body is not JSON"
        if kind == "linear" and not signatures.linear_timestamp_fresh(
            data.get("webhookTimestamp") if isinstance(data, dict) else None, now=timezone.now()
        ):
            raise _unauthorized("The delivery's webhookTimestamp is not within a minute of now.")
        if data is not None:
            try:
                change = payloads.read(kind, request.headers, data)
            except payloads.NotAnIssueEvent as exc:
                why = str(exc)
        receipt = services.tracker_delivery_receive(
            connection=connection,
            delivery_id=signatures.delivery_id(kind, headers=request.headers, body=body),
            change=change,
            why=why,
        )
        answer = HookResultSerializer(
            {
                "changed": receipt.changed,
                "redelivery": receipt.redelivery,
                "event": receipt.event,
                "externalId": receipt.external_id,
                "summary": receipt.summary,
                "actions": receipt.actions,
            }
        ).data
        code = status.HTTP_200_OK if receipt.changed else status.HTTP_202_ACCEPTED
        return Response(answer, status=code)
