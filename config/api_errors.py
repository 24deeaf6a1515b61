"""One exception handler turns every API error into the contract's envelope:
{"error": <name>, "message": <text>} plus "details" for validation errors.
"""

from __future__ import annotations

import logging
from typing import Any

from rest_framework import exceptions, status
from rest_framework.response import Response

logger = logging.getLogger(__name__)


class ApiError(exceptions.APIException):
    """An application error with a stable `error` name."""

    status_code = status.HTTP_400_BAD_REQUEST
    error = "bad_request"

    def __init__(
        self,
        message: str,
        *,
        error: str | None = None,
        status_code: int | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail=message)
        self.message = message
        if error is not None:
            self.error = error
        if status_code is not None:
            self.status_code = status_code
        self.details = details
        self.headers = headers or {}


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


def _envelope(error: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"error": error, "message": message}
    if details is not None:
        body["details"] = details
    return body


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    headers: dict[str, str] = {}
    if isinstance(exc, ApiError):
        body = _envelope(exc.error, exc.message, exc.details)
        return Response(body, status=exc.status_code, headers=exc.headers)
    if isinstance(exc, exceptions.ValidationError):
        body = _envelope(
            "invalid_payload", "The request body failed validation.", flatten_errors(exc.detail)
        )
        return Response(body, status=400)
    if isinstance(exc, exceptions.ParseError | exceptions.UnsupportedMediaType):
        details = {"body": str(exc.detail)}
        return Response(_envelope("invalid_payload", str(exc.detail), details), status=400)
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        headers["WWW-Authenticate"] = "Bearer"
        return Response(_envelope("unauthorized", str(exc.detail)), status=401, headers=headers)
    if isinstance(exc, exceptions.PermissionDenied):
        return Response(_envelope("forbidden", str(exc.detail)), status=403)
    if isinstance(exc, exceptions.NotFound):
        return Response(_envelope("not_found", str(exc.detail)), status=404)
    if isinstance(exc, exceptions.MethodNotAllowed):
        return Response(_envelope("method_not_allowed", str(exc.detail)), status=405)
    if isinstance(exc, exceptions.NotAcceptable):
        return Response(_envelope("not_acceptable", str(exc.detail)), status=406)
    if isinstance(exc, exceptions.Throttled):
        wait = int(exc.wait or 1)
        return Response(
            _envelope("rate_limited", str(exc.detail)),
            status=429,
            headers={"Retry-After": str(wait)},
        )
    if isinstance(exc, exceptions.APIException):
        return Response(_envelope("error", str(exc.detail)), status=exc.status_code)
    logger.exception("Unhandled API error", exc_info=exc)
    return Response(_envelope("internal_error", "Something went wrong on our side."), status=500)
