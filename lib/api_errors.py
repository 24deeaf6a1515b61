"""The contract's error envelope, built here and only here:
{"error": <name>, "message": <text>} plus "details" for validation errors;
one table of error names by status; and `ApiError`, an error an API view
raises to answer with a name of its own. The exception handler
(`config.api_errors`) and the middleware answer through these.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import exceptions, serializers

INTERNAL_ERROR_MESSAGE = "Something went wrong on our side."

# The error name of a status, where no more specific name applies
# (`invalid_payload`, `https_required`, `duplicate_external_ref`, ...).
ERROR_NAMES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    429: "rate_limited",
    500: "internal_error",
}


def error_name(status: int) -> str:
    return ERROR_NAMES.get(status, "internal_error" if status >= 500 else "bad_request")


def envelope(error: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"error": error, "message": message}
    if details is not None:
        body["details"] = details
    return body


class ApiError(exceptions.APIException):
    """An error the API answers with a stable `error` name of its own."""

    def __init__(
        self,
        message: str,
        *,
        error: str,
        status_code: int,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail=message)
        self.headers = headers
        self.message = message
        self.error = error
        self.status_code = status_code
        self.details = details


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, str]:
    """Flatten DRF's nested error detail into {"field.sub": "first message"}."""
    flat: dict[str, str] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = "" if key == "non_field_errors" else str(key)
            path = f"{prefix}.{name}" if prefix and name else (prefix or name or "body")
            flat.update(flatten_errors(value, path))
    elif isinstance(detail, list):
        if detail and all(not isinstance(item, dict | list) for item in detail):
            flat[prefix or "body"] = " ".join(str(item) for item in detail)
        else:
            for index, item in enumerate(detail):
                flat.update(flatten_errors(item, f"{prefix}[{index}]" if prefix else f"[{index}]"))
    else:
        flat[prefix or "body"] = str(detail)
    return flat


class ErrorEnvelopeSerializer(serializers.Serializer[Any]):
    """The one shape of every error the API returns."""

    error = serializers.CharField(
        help_text="Stable machine-readable name, e.g. `invalid_payload`, `unauthorized`."
    )
    message = serializers.CharField(help_text="Human-readable explanation; wording may change.")
    details = serializers.DictField(
        child=serializers.CharField(),
        required=False,
        help_text=(
            "Validation errors only (and `currentStatus` on `invalid_transition`): a flat map "
            "from request field (camelCase, as sent) to a message. Its shape is opaque."
        ),
    )


# --- how the envelope is documented (drf-spectacular) ---------------------------------


def error_example(name: str, error: str, message: str, **details: str) -> OpenApiExample:
    value: dict[str, Any] = {"error": error, "message": message}
    if details:
        value["details"] = details
    return OpenApiExample(name, value=value, response_only=True)


def error_response(description: str, *examples: OpenApiExample) -> OpenApiResponse:
    return OpenApiResponse(
        response=ErrorEnvelopeSerializer, description=description, examples=list(examples)
    )
