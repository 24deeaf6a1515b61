"""OpenAPI pieces of the public API: the bearer security scheme, the documented
error responses (one envelope, named errors, examples), and the
`WWW-Authenticate` header of every documented 401."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse

from integrations.serializers import ErrorEnvelopeSerializer


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "integrations.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "svc_…",
            "description": (
                "`Authorization: Bearer <API token>`. Mint a token on Settings, API Tokens; "
                "its plaintext (`svc_` followed by 36 letters and digits) is shown once."
            ),
        }


def error_example(name: str, error: str, message: str, **details: str) -> OpenApiExample:
    value: dict[str, Any] = {"error": error, "message": message}
    if details:
        value["details"] = details
    return OpenApiExample(name, value=value, response_only=True)


def error_response(description: str, *examples: OpenApiExample) -> OpenApiResponse:
    return OpenApiResponse(
        response=ErrorEnvelopeSerializer, description=description, examples=list(examples)
    )


INVALID_PAYLOAD_WRONG_TYPE = error_example(
    "Not JSON",
    "invalid_payload",
    "The request body must be JSON (Content-Type: application/json).",
    body="Unsupported content type 'text/plain'.",
)
INVALID_PAYLOAD_NOT_OBJECT = error_example(
    "Not an object",
    "invalid_payload",
    "The request body must be a JSON object.",
    body="Expected a JSON object.",
)

# A response header, declared as drf-spectacular does: a parameter with `response`.
AUTH_CHALLENGE = OpenApiParameter(
    "WWW-Authenticate",
    type={"type": "string", "example": "Bearer"},
    location=OpenApiParameter.HEADER,
    required=True,
    description="The authentication scheme to use: `Bearer`.",
    response=[401],
)
UNAUTHORIZED = error_response(
    "`unauthorized`: the bearer token is missing, malformed, unknown or revoked. "
    "Comes with `WWW-Authenticate: Bearer`.",
    error_example("Missing token", "unauthorized", "Authentication credentials were not provided."),
    error_example(
        "Unknown or revoked token",
        "unauthorized",
        "The bearer token is not valid (unknown or revoked).",
    ),
)
BAD_HOST = error_example("Unknown host", "bad_request", "The request was refused.")
BAD_HOST_DESCRIPTION = (
    " `bad_request`: the `Host` header names no host this service answers to (`ALLOWED_HOSTS`)."
)
INTERNAL_ERROR = error_response(
    "`internal_error`: something failed on the service's side. Retrying is safe: if the "
    "first call was stored after all, a replayed inbox call answers "
    "`409 duplicate_external_ref` and a replayed sync `200` with `changed: false`.",
    error_example("Server error", "internal_error", "Something went wrong on our side."),
)
HTTPS_REQUIRED = error_example(
    "Plain HTTP", "https_required", "This API is served over HTTPS only."
)
PAYLOAD_TOO_LARGE = error_response(
    "`payload_too_large`: the request body is larger than 1 MiB (1,048,576 bytes).",
    error_example(
        "Too large", "payload_too_large", "The request body is larger than 1048576 bytes."
    ),
)
