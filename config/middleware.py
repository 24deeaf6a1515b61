"""Project-wide request guards: HTTPS in production, proxy headers only from
proxies, JSON-only API errors, and no shared or stored copy of what a
signed-in person sees."""

from __future__ import annotations

import io
import logging
import threading

import csp.middleware
from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.utils import build_policy
from django.conf import settings
from django.core.exceptions import DisallowedHost, ImproperlyConfigured
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponsePermanentRedirect,
    JsonResponse,
)
from django.http.request import UnreadablePostError
from django.http.response import HttpResponseBase
from django.utils import timezone
from django.utils.cache import patch_cache_control

from config import views
from lib import request_body
from lib.api_errors import INTERNAL_ERROR_MESSAGE, envelope, error_name
from lib.client_address import from_trusted_proxy
from lib.logs import new_request_id, request_id_var, sane_request_id
from lib.outbound import is_loopback_address, is_loopback_host

logger = logging.getLogger(__name__)

API_PREFIXES = ("/api/",)


def is_api_path(path: str) -> bool:
    return path.startswith(API_PREFIXES)


# The token API (inbox, sync, the read API, the tracker hooks): no session, no
# cookie, no page. POST /api/gather is not among them: it takes a session and
# its CSRF token (docs/api.md).
TOKEN_API_PREFIXES = ("/api/v1/",)


def is_token_api_path(path: str) -> bool:
    return path.startswith(TOKEN_API_PREFIXES)


def error_response(status: int, error: str, message: str) -> JsonResponse:
    return JsonResponse(envelope(error, message), status=status)


def is_local_request(request: HttpRequest) -> bool:
    """Addressed to a loopback host by a client on this machine. The Host header
    alone is the client's word: a remote client could send `Host: localhost`."""
    host = request.META.get("HTTP_HOST") or request.META.get("SERVER_NAME", "")
    if not is_loopback_host(host):
        return False
    return is_loopback_address(request.META.get("REMOTE_ADDR", ""))


REQUEST_ID_HEADER = "X-Request-ID"


class RequestIdMiddleware:
    """Every request has an id: the client's (or its proxy's) `X-Request-ID`
    when it is short and plain (lib.logs.sane_request_id), else a new one. It
    is on every log line written for the request (lib.logs), travels with the
    Celery tasks the request queues (config/celery.py), and is echoed in the
    response's `X-Request-ID`."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = sane_request_id(request.META.get("HTTP_X_REQUEST_ID")) or new_request_id()
        request.request_id = request_id  # type: ignore[attr-defined]  # ours, for the logs and error pages
        token = request_id_var.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response[REQUEST_ID_HEADER] = request_id
        return response


class UntrustedProxyHeadersMiddleware:
    """The forwarded scheme header (SECURE_PROXY_SSL_HEADER, on with
    TRUST_X_FORWARDED_PROTO) is believed only from your proxies
    (TRUSTED_PROXY_NETWORKS, lib.client_address.from_trusted_proxy): a client
    that reaches the app port directly and says `X-Forwarded-Proto: https`
    over plain HTTP would otherwise be served, and sent secure cookies, as if
    over HTTPS. Django reads the header from META wherever it asks
    `is_secure()`, so it is removed there."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
        if header and header[0] in request.META and not from_trusted_proxy(request):
            del request.META[header[0]]
        return self.get_response(request)


# The probe routes (config/urls.py): answered to a probe whatever its scheme or
# Host (HealthProbeMiddleware).
PROBE_PATHS = ("/healthz", "/readyz")


class HealthProbeMiddleware:
    """`/healthz` and `/readyz` tell a balancer's or an orchestrator's probe
    the truth, over plain HTTP and with whatever Host it sends.

    A probe comes from the balancer's or the kubelet's address, over plain
    HTTP, often with the pod's IP as its Host: HttpsOnlyMiddleware would
    answer it 301 (which Kubernetes counts as success, whatever the state)
    and Django's host check 400. So a GET or HEAD of a probe route that
    would be refused for its scheme or its Host is answered here, before
    those guards, by the same views. That is safe because what they answer
    does not depend on the Host (no link, no redirect, no cookie) and says
    only `{"status": ...}` to such a caller (the readiness checks go to a
    probe on this machine or to staff: config.views.may_see_readiness_details;
    no session is read here, so staff see them over HTTPS). Every other
    request to them, and every other route, passes through unchanged.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path in PROBE_PATHS and request.method in ("GET", "HEAD"):
            refused_scheme = (
                settings.HTTPS_ONLY and not request.is_secure() and not is_local_request(request)
            )
            if refused_scheme or not _host_allowed(request):
                view = views.healthz if request.path == "/healthz" else views.readyz
                return view(request)
        return self.get_response(request)


def _host_allowed(request: HttpRequest) -> bool:
    try:
        request.get_host()
    except DisallowedHost:
        return False
    return True


class HttpsOnlyMiddleware:
    """In production, plain HTTP is served only to loopback hosts, asked from
    this machine (a health check, an operator).

    Pages redirect to HTTPS, on a host Django validated against ALLOWED_HOSTS
    (a forged Host gets 400, never a redirect to it). The API refuses with 403
    https_required instead of redirecting, so a client never re-sends its
    bearer token after a redirect.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if settings.HTTPS_ONLY and not request.is_secure() and not is_local_request(request):
            if is_api_path(request.path):
                return error_response(403, "https_required", "This API is served over HTTPS only.")
            try:
                host = request.get_host()
            except DisallowedHost:
                return HttpResponseBadRequest("Bad Request (400)", content_type="text/plain")
            return HttpResponsePermanentRedirect(f"https://{host}{request.get_full_path()}")
        return self.get_response(request)


def payload_too_large() -> JsonResponse:
    limit = settings.API_MAX_BODY_BYTES
    return error_response(413, error_name(413), f"The request body is larger than {limit} bytes.")


def read_bounded_body(request: HttpRequest) -> HttpResponse | None:
    """Read an API request's body, refusing more than settings.API_MAX_BODY_BYTES.

    DRF's parsers stream the body, so DATA_UPLOAD_MAX_MEMORY_SIZE never applies
    to them. A declared Content-Length over the limit is refused unread; the
    body is then read up to one byte past the limit, which catches a body that
    turns out larger than declared (or one sent with no length, under ASGI),
    and at most limit + 1 bytes are ever held in memory. A chunked body is
    read where the server can end it (`lib.request_body.body_stream`), and
    refused with a clear message where it cannot, rather than taken for an
    empty body.
    """
    limit = settings.API_MAX_BODY_BYTES
    declared = request_body.declared_length(request)
    if declared > limit:
        return payload_too_large()
    try:
        stream = request_body.body_stream(request)
        body = stream.read(limit + 1)
    except request_body.Unreadable as exc:
        return error_response(400, "invalid_payload", str(exc))
    except UnreadablePostError:
        return error_response(400, "invalid_payload", "The request body could not be read.")
    if len(body) > limit:
        return payload_too_large()
    # Hand the body on as if HttpRequest.body had read it (Django does the same
    # there), with its real length: DRF takes a request without a
    # Content-Length for one without a body.
    request._body = body
    request._stream = io.BytesIO(body)
    request.META["CONTENT_LENGTH"] = str(len(body))
    return None


# Routes that read their own body, larger than the API's limit, streaming it
# (the tracker hooks: trackers/api.py, docs/trackers.md).
READS_ITS_OWN_BODY = ("/api/v1/hooks/",)


_FALLBACK_MESSAGES = {
    404: "No such route.",
    405: "Method not allowed.",
    500: INTERNAL_ERROR_MESSAGE,
}


class ApiErrorMiddleware:
    """No API route answers with an HTML page or a stack trace.

    DRF's exception handler covers errors raised inside API views; this covers
    what happens outside them (unknown /api/ paths, errors in middleware), and
    refuses API bodies over settings.API_MAX_BODY_BYTES before any view runs
    (except on the routes that read their own, READS_ITS_OWN_BODY).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_api_path(request.path) and not request.path.startswith(READS_ITS_OWN_BODY):
            refused = read_bounded_body(request)
            if refused is not None:
                return refused
        response = self.get_response(request)
        if (
            not is_api_path(request.path)
            or response.status_code < 400
            or response.get("Content-Type", "").startswith("application/json")
        ):
            return response
        # e.g. Django's own 404 for an unknown route, 400 for a disallowed Host
        # header, 403 for CSRF; any 5xx is answered as a plain 500.
        status = min(response.status_code, 500)
        message = _FALLBACK_MESSAGES.get(status, "The request was refused.")
        return error_response(status, error_name(status), message)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_api_path(request.path):
            return None
        logger.exception("Unhandled error on %s", request.path)
        return error_response(500, error_name(500), INTERNAL_ERROR_MESSAGE)


# The response attributes of django-csp's decorators (@csp_update, @csp_replace,
# @csp_override and their report-only twins): a response with one has a policy
# of its own.
_OWN_POLICY = tuple(
    f"_csp_{kind}{ro}" for kind in ("config", "update", "replace") for ro in ("", "_ro")
)
_built_policies: tuple[object, object, str, str] | None = None


def _policies() -> tuple[str, str]:
    """The policy and the report-only policy the settings give, built once
    for the settings' objects (again when they are replaced, as tests'
    override_settings does)."""
    global _built_policies
    config = getattr(settings, "CONTENT_SECURITY_POLICY", None)
    report_only = getattr(settings, "CONTENT_SECURITY_POLICY_REPORT_ONLY", None)
    built = _built_policies
    if built is None or built[0] is not config or built[1] is not report_only:
        built = (config, report_only, build_policy(), build_policy(report_only=True))
        _built_policies = built
    return built[2], built[3]


class CSPMiddleware(csp.middleware.CSPMiddleware):
    """django-csp's, its headers built once: a response with no policy of
    its own, to a request whose nonce nobody asked for, carries the same
    headers every time, and django-csp built them again for each (its
    policy parts copied by `dataclasses.asdict` and joined, twice a
    response: about 5 % of a token call's CPU, issue 29). Any other
    response, and a 404 or 500 with DEBUG on (which django-csp leaves
    alone), is django-csp's own."""

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        if (
            getattr(request, "_csp_nonce", None) is not None
            or any(getattr(response, name, None) is not None for name in _OWN_POLICY)
            or (settings.DEBUG and response.status_code in (404, 500))
        ):
            return super().process_response(request, response)
        policy, report_only = _policies()
        # As django-csp sets them: unless set already, exempted or excluded.
        for header, value, exempt, name in (
            (HEADER, policy, "_csp_exempt", "CONTENT_SECURITY_POLICY"),
            (
                HEADER_REPORT_ONLY,
                report_only,
                "_csp_exempt_ro",
                "CONTENT_SECURITY_POLICY_REPORT_ONLY",
            ),
        ):
            if not value or header in response or getattr(response, exempt, False) is not False:
                continue
            excluded = (getattr(settings, name, None) or {}).get("EXCLUDE_URL_PREFIXES") or ()
            if not request.path_info.startswith(tuple(excluded)):
                response[header] = value
        # A nonce asked for after the header is written is an error, as django-csp makes it.
        request.csp_nonce = csp.middleware.CheckableLazyObject(self._csp_nonce_post_response)  # type: ignore[attr-defined]  # django-csp's request attribute
        return response


class PrivateResponsesMiddleware:
    """Whatever is answered to someone signed in (a page, the Accord's
    fragment, a polling endpoint's JSON, an API answer to a token) is theirs:
    `Cache-Control: private, no-store`, so neither a shared proxy nor the
    browser's disk keeps a copy for the next person at that machine. A
    response that already says `no-store` (never_cache, the pages that show a
    secret once) is left as it is. Anonymous responses (public pages, the
    sign-in form) are untouched, and static files never get here: WhiteNoise
    answers them earlier in MIDDLEWARE."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        # DRF sets request.user too once a bearer token authenticated.
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            directives = response.get("Cache-Control", "").lower()
            if "no-store" not in directives:
                patch_cache_control(response, private=True, no_store=True)
        return response


# PageMiddlewareEnd hands its continuation to the PageMiddlewareStart before
# it: Django builds MIDDLEWARE from the last entry to the first, in one call
# on one thread, so the End is made just before the page middleware between
# them and the Start just after.
_built = threading.local()


class PageMiddlewareStart:
    """The token API's requests skip the pages' middleware.

    Everything in MIDDLEWARE between this and PageMiddlewareEnd is the pages'
    (sessions, CSRF, django.contrib.auth's request.user, messages,
    X-Frame-Options, allauth, the user's time zone, the session-ended
    message, the admin's second factor, the SSO buttons' form-action). A
    request to /api/v1/ (is_token_api_path) goes from here straight to what
    follows PageMiddlewareEnd; every other request, POST /api/gather
    included, passes through them all as before. What the API keeps is
    before this (request ids, the proxy and HTTPS rules, the probes, the
    security headers and CSP, static files, the error envelope and the body
    limit) and after PageMiddlewareEnd (Cache-Control: private for a token's
    answers); DRF's bearer-token authentication sets request.user for the
    API. The entries stay in MIDDLEWARE, where Django's and allauth's checks
    look for them.

    The API speaks UTC: the time zone a signed-in page activated on this
    thread (accounts.middleware.UserTimezoneMiddleware, which the API no
    longer passes) is deactivated first.
    """

    def __init__(self, get_response):
        self.get_response = get_response
        end = getattr(_built, "end", None)
        _built.end = None
        if end is None:
            raise ImproperlyConfigured(
                "config.middleware.PageMiddlewareStart needs PageMiddlewareEnd after it "
                "in MIDDLEWARE."
            )
        self.skip_pages = end.get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_token_api_path(request.path):
            timezone.deactivate()
            return self.skip_pages(request)
        return self.get_response(request)


class PageMiddlewareEnd:
    """Where the token API's requests rejoin MIDDLEWARE (PageMiddlewareStart)."""

    def __init__(self, get_response):
        self.get_response = get_response
        _built.end = self

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)
