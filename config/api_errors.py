"""The one DRF exception handler (settings.REST_FRAMEWORK): every error raised
in an API view answers the contract's envelope (`lib.api_errors`): DRF's own
exceptions, `ApiError`, and the domain errors of the commitment services,
which views let through rather than catch. What fails outside the views
(unknown routes, middleware) is answered by
`config.middleware.ApiErrorMiddleware`, with the same envelope and names.
"""

from __future__ import annotations

import logging
from typing import Any

from rest_framework import exceptions
from rest_framework.response import Response

from commitments.errors import (
    CommitmentError,
    CommitmentNotFound,
    Contended,
    DuplicateExternalRef,
    InvalidTransition,
    NotPermitted,
    ProposalAlreadyOpen,
    ProposalNotOpen,
    TermsChanged,
)
from lib.api_errors import (
    INTERNAL_ERROR_MESSAGE,
    ApiError,
    envelope,
    error_name,
    flatten_errors,
)

logger = logging.getLogger(__name__)


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
        details: dict[str, Any] = {"currentStatus": exc.current_status}
        return ApiError(str(exc), error="invalid_transition", status_code=409, details=details)
    if isinstance(exc, TermsChanged):
        # The caller answered terms it was shown that are no longer the
        # current ones: nothing changed; fetch the commitment and ask again.
        details = {"termsVersion": exc.current_version}
        return ApiError(str(exc), error="terms_changed", status_code=409, details=details)
    if isinstance(exc, ProposalNotOpen | ProposalAlreadyOpen):
        # No route of the contract makes the conversation's moves (issue 26);
        # should one, these are conflicts with the commitment's state.
        name = "proposal_not_open" if isinstance(exc, ProposalNotOpen) else "proposal_open"
        return ApiError(str(exc), error=name, status_code=409)
    if isinstance(exc, Contended):
        # Not a refusal: the move lost to other writes every time it was
        # made, and nothing was written. A 5xx, which the contract tells
        # clients to retry (a 4xx is "deterministic for the same payload"),
        # with the moment to wait as a 429's.
        headers = {"Retry-After": str(Contended.RETRY_AFTER)}
        return ApiError(str(exc), error="busy", status_code=503, headers=headers)
    if isinstance(exc, CommitmentError):
        # What the services refuse as it was asked (nothing changed, a blank
        # comment, an address that cannot be asked, ...).
        return ApiError(str(exc), error="invalid_payload", status_code=400)
    return exc


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    exc = _from_domain(exc)
    if isinstance(exc, ApiError):
        return _answer(exc.status_code, exc.error, exc.message, exc.details, exc.headers)
    if isinstance(exc, exceptions.ValidationError):
        details = flatten_errors(exc.detail)
        return _answer(400, "invalid_payload", "The request body failed validation.", details)
    if isinstance(exc, exceptions.ParseError | exceptions.UnsupportedMediaType):
        return _answer(400, "invalid_payload", str(exc.detail), {"body": str(exc.detail)})
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        # Always 401 with the challenge (DRF would make it 403 for an
        # authenticator without one): Bearer, unless the view names its own
        # (POST /api/gather takes a session, never a bearer token).
        challenge = getattr(context.get("view"), "www_authenticate", "Bearer")
        headers = {"WWW-Authenticate": challenge}
        return _answer(401, error_name(401), str(exc.detail), headers=headers)
    if isinstance(exc, exceptions.Throttled):
        wait = exc.wait  # type: ignore[attr-defined]  # set by Throttled.__init__, not in the stubs
        headers = {"Retry-After": str(int(wait or 1))}
        return _answer(429, error_name(429), str(exc.detail), headers=headers)
    if isinstance(exc, exceptions.APIException):  # PermissionDenied, NotFound, ...
        return _answer(exc.status_code, error_name(exc.status_code), str(exc.detail))
    logger.exception("Unhandled API error", exc_info=exc)
    return _answer(500, error_name(500), INTERNAL_ERROR_MESSAGE)
