"""The OpenAPI texts of POST /api/gather, kept out of the view: its
description (with the order of checks and the cost of every call), request
and response schemas, examples, and every error it can answer."""

from __future__ import annotations

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
)

from gather.serializers import GatherResultSerializer, GatherSerializer
from lib.api_errors import error_example, error_response

RETRY_AFTER = OpenApiParameter(
    "Retry-After",
    type={"type": "integer", "minimum": 1, "example": 240},
    location=OpenApiParameter.HEADER,
    required=True,
    description="Whole seconds until you may gather again.",
    response=[429],
)

DESCRIPTION = (
    "Reads pasted text (meeting notes, a chat log, an e-mail thread) with **your own** "
    "model provider key (OpenAI or Anthropic, stored on Settings, Model keys) and answers "
    "draft commitments, each with a confidence level and the passage it comes from. "
    "Nothing is stored: saving drafts is a separate step of the capture page (`/capture/`).\n\n"
    "**Each call costs a real upstream call** to your provider, billed to your key, "
    "including every call made with *Try it out* on this page. (The inbox and sync "
    "operations have no such cost.)\n\n"
    "Authentication: the session cookie of a signed-in user, with the CSRF token in the "
    "`X-CSRFToken` header (this page's try-it client sends it for you when you are signed "
    "in). Bearer tokens are refused: there is no programmatic path; programmatic clients "
    "use `POST /api/v1/inbox`.\n\n"
    "Checks run in this order, the first failure answering: plain HTTP off loopback in "
    "production (403 `https_required`); body over 1 MiB (413); a bearer token, or no "
    "signed-in session (401); no valid CSRF token (403 `forbidden`); the body (400 "
    "`invalid_payload`: not a JSON object, or `text` missing, not a string, blank or over "
    "100,000 characters after trimming, in `details.text`); no stored provider key (400 "
    "`no_byok_key`); the per-user rate limit (429, a token bucket of `GATHER_RATE_BURST` "
    "calls refilled at `GATHER_RATE_PER_HOUR` an hour, with `Retry-After`); the provider "
    "(502 `upstream_failure`: an invalid key, exhausted quota, a missing model, malformed "
    "or truncated output, a timeout; the provider's message is passed through as an opaque "
    "string). A call refused before the rate limit spends none of it.\n\n"
    "A model that **declines** to read the text is not a failure: the answer is `200` with "
    "`drafts: []`, the model and the usage as the provider reported them (a refusal still "
    "costs tokens), and the model's own words in `refusal` (null in every other answer). "
    "A long text is read in parts; a part the model declines gives no drafts, the other "
    "parts' drafts are kept, and `refusal` names the parts declined.\n\n"
    "Deadlines are resolved against the current time in your time zone; e-mail addresses "
    "are filled only for your collaborators, where the name matches one of them "
    "unambiguously, or where the text writes a collaborator's address next to the name "
    '("Sam (sam@example.com)"); an address that is no collaborator\'s is never used. '
    "A model that finds nothing to extract answers `drafts: []`."
)

GATHERED = OpenApiResponse(
    response=GatherResultSerializer,
    description=(
        "The drafts (validated against the draft-list schema), the model, the usage, and "
        "`refusal`: null, or the model's words when it declined."
    ),
    examples=[
        OpenApiExample(
            "Two drafts",
            value={
                "drafts": [
                    {
                        "description": "Send the revised budget to finance",
                        "assigneeName": "Priya",
                        "assigneeEmail": "priya@example.com",
                        "deadline": "2025-03-07T17:00:00+05:30",
                        "deadlineText": "by Friday",
                        "confidence": "high",
                        "sourceQuote": "Priya will send the revised budget to finance by Friday.",
                    },
                    {
                        "description": "Look into the flaky login test",
                        "assigneeName": "Sam",
                        "assigneeEmail": None,
                        "deadline": None,
                        "deadlineText": None,
                        "confidence": "low",
                        "sourceQuote": "Sam might look into the flaky login test.",
                    },
                ],
                "model": "gpt-4o-mini",
                "usage": {"inputTokens": 812, "outputTokens": 164},
                "refusal": None,
            },
            response_only=True,
        ),
        OpenApiExample(
            "Nothing to extract",
            value={
                "drafts": [],
                "model": "claude-3-5-haiku-latest",
                "usage": {"inputTokens": 95, "outputTokens": 12},
                "refusal": None,
            },
            response_only=True,
        ),
        OpenApiExample(
            "The model declined",
            value={
                "drafts": [],
                "model": "gpt-4o-mini",
                "usage": {"inputTokens": 640, "outputTokens": 11},
                "refusal": "I'm sorry, but I can't help with that request.",
            },
            response_only=True,
        ),
    ],
)

gather_schema = extend_schema(
    operation_id="gather_drafts",
    tags=["Capture"],
    summary="Draft commitments from pasted text (your own model key)",
    description=DESCRIPTION,
    request=GatherSerializer,
    parameters=[RETRY_AFTER],
    examples=[
        OpenApiExample(
            "Meeting notes",
            value={
                "text": "Weekly sync, Tue.\nPriya will send the revised budget to finance by "
                "Friday.\nSam might look into the flaky login test."
            },
            request_only=True,
        )
    ],
    responses={
        200: GATHERED,
        400: error_response(
            "`invalid_payload`: the body is not a JSON object sent as `application/json`, or "
            "`text` is missing, not a string, blank, or longer than 100,000 characters after "
            "trimming (`details.text`). `no_byok_key`: you have no stored provider key; the "
            "message names the Model keys page and its address. `bad_request`: the `Host` "
            "header names no host this service answers to.",
            error_example(
                "Text too long",
                "invalid_payload",
                "The request body failed validation.",
                text="Ensure this field has no more than 100000 characters.",
            ),
            error_example(
                "Not an object",
                "invalid_payload",
                "The request body must be a JSON object.",
                body="Expected a JSON object.",
            ),
            error_example(
                "No model key",
                "no_byok_key",
                "You have no model provider key: add an OpenAI or Anthropic key on the Model "
                "keys page (https://commitments.example.com/settings/model-keys/), then try "
                "again.",
            ),
            error_example("Unknown host", "bad_request", "The request was refused."),
        ),
        401: error_response(
            "`unauthorized`: no signed-in session, or a bearer token was sent (there is no "
            "programmatic path to gather). Comes with `WWW-Authenticate: Cookie "
            'realm="session"`: sign in on this site.',
            error_example(
                "Not signed in", "unauthorized", "Authentication credentials were not provided."
            ),
        ),
        403: error_response(
            "`forbidden`: the CSRF token is missing or wrong (send the `csrftoken` cookie's "
            "value in `X-CSRFToken`). `https_required`: plain HTTP to a non-loopback host in "
            "production.",
            error_example("No CSRF token", "forbidden", "CSRF Failed: CSRF token missing."),
            error_example("Plain HTTP", "https_required", "This API is served over HTTPS only."),
        ),
        413: error_response(
            "`payload_too_large`: the request body is larger than 1 MiB (1,048,576 bytes).",
            error_example(
                "Too large", "payload_too_large", "The request body is larger than 1048576 bytes."
            ),
        ),
        429: error_response(
            "`rate_limited`: you have gathered too often for now (a per-user token bucket). "
            "Nothing was sent upstream: wait `Retry-After` seconds; the message says it in "
            "whole minutes, rounded up.",
            error_example(
                "Too many calls", "rate_limited", "Too many gather calls: try again in 4 minutes."
            ),
        ),
        502: error_response(
            "`upstream_failure`: the provider failed (invalid key, exhausted quota, missing "
            "model, malformed or truncated output, timeout; a refusal is a 200). `message` is "
            "the provider's own message, an opaque string; it is not a stable code.",
            error_example(
                "Invalid key",
                "upstream_failure",
                "Incorrect API key provided: sk-...abcd.",
            ),
        ),
    },
)
