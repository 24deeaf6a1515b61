"""The OpenAPI description of POST /api/v1/hooks/{hookId}: one operation whose
body is the tracker's own (documented by each tracker, not here)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers

from lib.api_errors import error_example, error_response
from trackers.outcomes import Did


class HookActionSerializer(serializers.Serializer):
    who = serializers.CharField(
        help_text="The tracker's user (as the tracker shows them), or the commitment's externalId."
    )
    did = serializers.ChoiceField(
        choices=Did.values,
        help_text=(
            "What was done: created, completed; recorded (closed without being done: not "
            "completed); renegotiated (the due date changed before the handshake); noted (the "
            "due date changed after it: the accepted deadline stays); moved (the issue has a "
            "new key); kept or skipped (nothing, see why)."
        ),
    )
    trackerUser = serializers.CharField(
        required=False,
        help_text="The tracker's identity field of the person (login, username, user id, "
        "accountId): what the identity map matches.",
    )
    pastDue = serializers.DateField(
        required=False, help_text="The due date, when it had passed already at creation."
    )
    why = serializers.CharField(required=False, help_text="Why, when nothing was done.")
    email = serializers.CharField(required=False, help_text="The assignee's address used.")
    commitmentId = serializers.UUIDField(required=False)
    externalId = serializers.CharField(required=False)


class HookResultSerializer(serializers.Serializer):
    changed = serializers.BooleanField(help_text="Whether commitments were created or changed.")
    redelivery = serializers.BooleanField(
        help_text="True when this delivery id, or this very body under another id, was received "
        "before: nothing was done again."
    )
    event = serializers.CharField(allow_blank=True, help_text="The tracker's event, as read.")
    externalId = serializers.CharField(allow_blank=True, help_text="The issue's key.")
    summary = serializers.CharField(help_text="What was done and why, in words.")
    actions = HookActionSerializer(many=True)


hook_schema = extend_schema(
    operation_id="tracker_hook",
    tags=["Tracker connections"],
    summary="Receive a tracker connection's webhook (GitHub, GitLab, Linear, Jira)",
    description=(
        "The receiving URL of a tracker connection (Settings, Tracker connections, or "
        "`manage.py add_tracker_connection`). The body is the tracker's own webhook payload; "
        "the delivery is authenticated by the tracker's signature with the connection's "
        "secret, checked before the body is read: GitHub `X-Hub-Signature-256`, GitLab "
        "`X-Gitlab-Token`, Linear `Linear-Signature` (and `webhookTimestamp` within a "
        "minute), Jira `X-Hub-Signature`. An authentic delivery is always answered 2xx, "
        "saying what was done; its delivery id (`X-GitHub-Delivery`, `Idempotency-Key`, "
        "`Linear-Delivery`, `X-Atlassian-Webhook-Identifier`) makes a redelivery a no-op, and "
        "so does the same body under another delivery id (a replay: the id is not signed, "
        "the body is). The body is JSON, or GitHub's `application/x-www-form-urlencoded` "
        "form (`payload=<the JSON>`; the signature is over the raw body either way), of up "
        "to 25 MiB (not the 1 MiB of the other routes); an authentic body over that is "
        "answered 202 and logged as too large. What each event does: docs/trackers.md."
    ),
    auth=[],
    parameters=[
        OpenApiParameter(
            "hook_id",
            OpenApiTypes.STR,
            OpenApiParameter.PATH,
            description="The connection's random id, the last segment of its receiving URL.",
        )
    ],
    request={
        "application/json": OpenApiTypes.OBJECT,
        "application/x-www-form-urlencoded": inline_serializer(
            name="GitHubFormDelivery",
            fields={
                "payload": serializers.CharField(
                    help_text="The event's JSON: GitHub's default content type sends it so."
                )
            },
        ),
    },
    responses={
        200: OpenApiResponse(HookResultSerializer, description="Commitments were changed."),
        202: OpenApiResponse(
            HookResultSerializer,
            description="Authentic, and nothing was done (see `summary`).",
            examples=[
                OpenApiExample(
                    "Unmapped assignee",
                    value={
                        "changed": False,
                        "redelivery": False,
                        "event": "issues.assigned",
                        "externalId": "acme/app#123",
                        "summary": "Skipped octocat: not in the identity map, and the tracker "
                        "sent no e-mail.",
                        "actions": [
                            {
                                "who": "octocat",
                                "did": "skipped",
                                "why": "not in the identity map, and the tracker sent no e-mail",
                            }
                        ],
                    },
                    response_only=True,
                )
            ],
        ),
        400: error_response(
            "A chunked body the server cannot end (the development server), or a client that "
            "went away: nothing written.",
            error_example(
                "Unreadable",
                "invalid_payload",
                "This server cannot read a chunked body: send it with a Content-Length header.",
            ),
        ),
        413: error_response(
            "The body is over four times the limit (100 MiB), more than any tracker sends, so "
            "its signature cannot be checked: nothing written. (An authentic body between 25 "
            "and 100 MiB is answered 202 and logged as too large.)",
            error_example("Too large", "payload_too_large", "The request body is too large."),
        ),
        401: error_response(
            "The signature is missing or wrong, or the URL names no connection: nothing written.",
            error_example(
                "Bad signature",
                "unauthorized",
                "The delivery is not signed with "
                "this connection's secret (or the address is not a connection's).",
            ),
        ),
    },
)
