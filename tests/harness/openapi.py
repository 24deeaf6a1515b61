"""For Schemathesis runs against the app: the checks every response must pass,
and Django's WSGI handler fit to run inside a test's transaction."""

from __future__ import annotations

from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    # The schema and the server agree on what is valid: a request the document
    # allows is not refused 400 (401, 403, 404, 409 are fine), one it forbids
    # is not accepted.
    positive_data_acceptance,
    negative_data_rejection,
]


class WSGIApp:
    """Django's WSGI handler, minus the end-of-request connection cleanup: that
    would close the test's connection in the middle of its transaction (Django's
    own test client disconnects it the same way)."""

    def __init__(self) -> None:
        self.handler = WSGIHandler()

    def __call__(self, environ, start_response):
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        try:
            response = self.handler(environ, start_response)
            try:
                return [b"".join(response)]
            finally:
                response.close()  # fires request_finished while it is disconnected
        finally:
            request_started.connect(close_old_connections)
            request_finished.connect(close_old_connections)
