"""Every API error answers the contract's envelope, built here and only here:
{"error": <name>, "message": <text>} plus "details" for validation errors.

Errors raised inside DRF views reach `exception_handler` (settings.REST_FRAMEWORK):
DRF's own exceptions, `ApiError`, and the domain errors of the commitment
services, which views let through rather than catch. What fails outside the
views (unknown routes, middleware) is answered by
`config.middleware.ApiErrorMiddleware`, with the same envelope and names.
"""

from __future__ import annotations

import logging
from typing import Any

from rest_framework import exceptions
from rest_framework.response import Response

from commitments.errors import (
    CommitmentNotFound,
    DuplicateExternalRef,
    InvalidTransition,
    NotPermitted,
)

logger = logging.getLogger(__name__)

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
        self, message: str, *, error: str, status_code: int, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(detail=message)
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


def _answer(
    status: int,
    error: str,
    message: str,
    details: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    return Response(envelope(error, message, details), status=status, headers=headers)


def _from_domain(exc: Exception) -> Exception:
    """The API's answer to an error of the commitment services."""
    if isinstance(exc, DuplicateExternalRef):
        return ApiError(str(exc), error="duplicate_external_ref", status_code=409)
    if isinstance(exc, CommitmentNotFound | NotPermitted):
        # A token reaches only its owner's commitments: one it may not act on
        # is not there for it (the inbox refuses another assigner itself, 403).
        return ApiError("No such commitment.", error="not_found", status_code=404)
    if isinstance(exc, InvalidTransition):
        details = {"currentStatus": exc.current_status}
        return ApiError(str(exc), error="invalid_transition", status_code=409, details=details)
    return exc


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    exc = _from_domain(exc)
    if isinstance(exc, ApiError):
        return _answer(exc.status_code, exc.error, exc.message, exc.details)
    if isinstance(exc, exceptions.ValidationError):
        details = flatten_errors(exc.detail)
        return _answer(400, "invalid_payload", "The request body failed validation.", details)
    if isinstance(exc, exceptions.ParseError | exceptions.UnsupportedMediaType):
        return _answer(400, "invalid_payload", str(exc.detail), {"body": str(exc.detail)})
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        # Always 401 with the challenge (DRF would make it 403 for an
        # authenticator without one).
        headers = {"WWW-Authenticate": "Bearer"}
        return _answer(401, error_name(401), str(exc.detail), headers=headers)
    if isinstance(exc, exceptions.Throttled):
        headers = {"Retry-After": str(int(exc.wait or 1))}
        return _answer(429, error_name(429), str(exc.detail), headers=headers)
    if isinstance(exc, exceptions.APIException):  # PermissionDenied, NotFound, ...
        return _answer(exc.status_code, error_name(exc.status_code), str(exc.detail))
    logger.exception("Unhandled API error", exc_info=exc)
    return _answer(500, error_name(500), INTERNAL_ERROR_MESSAGE)
