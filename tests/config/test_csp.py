"""The Content-Security-Policy (django-csp): on every response, with no inline
script allowed, and every page, admin and the Swagger UI included, works
under it: nothing they render needs an inline script, an inline event
handler or an inline style."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.test import RequestFactory
from django.urls import reverse

from audit.services import Actor
from commitments import services
from commitments.models import Status
from gather.services import model_key_set
from tests.harness.api import sign_in
from tests.harness.commitments import commitment_in
from tests.harness.csp import assert_strict, inline_code

pytestmark = pytest.mark.django_db

# --- the header ---------------------------------------------------------------------------


def test_pages_carry_the_policy(client, assigner):
    assert_strict(client.get("/accounts/login/"))
    client.force_login(assigner)
    assert_strict(client.get("/"))


def test_the_api_reference_and_its_script_carry_the_policy(client):
    page = client.get("/api-reference")
    assert page.status_code == 200
    assert_strict(page)
    script = client.get("/api-reference?script=")
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    assert_strict(script)


def test_the_api_reference_script_that_carries_a_csrf_token_is_never_cached(client):
    script = client.get("/api-reference?script=")

    assert "csrfCookie() ||" in script.content.decode()  # the token, as a fallback
    directives = {d.strip() for d in script["Cache-Control"].split(",")}
    assert {"private", "no-store"} <= directives
    assert "public" not in directives and "Cookie" in script["Vary"]


def test_the_apis_json_answers_carry_it_too(client):
    """Harmless there (a browser renders no JSON as a page), and it costs
    nothing to send it everywhere rather than decide where."""
    refused = client.post("/api/v1/inbox", data="{}", content_type="application/json")
    assert refused.status_code == 401
    assert refused["Content-Type"] == "application/json"
    assert_strict(refused)
    assert_strict(client.get("/api-reference/openapi.json"))
    assert_strict(client.get("/api/v1/nothing-here"))


# --- what the pages render ----------------------------------------------------------------


def test_the_finder_sees_what_the_policy_blocks():
    page = (
        '<script>alert(1)</script><script src="/static/js/app.js"></script>'
        '<script type="application/json">{}</script><button onclick="go()">x</button>'
        '<a href="javascript:go()">x</a><p style="color: red">x</p><style>p {}</style>'
    )
    assert len(inline_code(page)) == 5


def admin_pages(staff, c) -> list[str]:
    """Every changelist and add page of the admin, and a change page of a
    user and of a commitment."""
    request = RequestFactory().get("/admin/")
    request.user = staff
    urls = ["/admin/"]
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
        if model_admin.has_add_permission(request):
            urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_add"))
    urls.append(reverse("admin:accounts_user_change", args=[staff.pk]))
    urls.append(reverse("admin:commitments_commitment_change", args=[c.pk]))
    return urls


def test_no_page_renders_inline_script_event_handlers_or_inline_styles(
    client, assigner, assignee, staff
):
    pending = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    draft = services.commitment_create_draft(
        actor=Actor.for_user(assigner), assignee=assignee, description="A draft"
    )
    signed_out = [
        "/accounts/login/",
        "/accounts/signup/",
        "/accounts/password/reset/",
        "/api-reference",
    ]
    signed_in = [
        "/",
        "/dashboard/",
        "/commitments/new",
        "/accord/fragment",
        f"/commitments/{pending.pk}",
        f"/commitments/{draft.pk}",
        "/capture/",
        "/settings/",
        "/settings/tokens/",
        "/settings/notifications/",
        "/settings/webhooks/",
        "/settings/model-keys/",
        "/settings/model-keys/openai/delete",
        "/accounts/email/",
        "/accounts/password/change/",
        "/api-reference",
        "/no-such-page/",
    ]
    for person in (assigner, assignee):  # the Model keys page with a key in its list
        model_key_set(user=person, provider="openai", key="sk-csp-check-0000")
    rendered: dict[str, str] = {}
    for path in signed_out:
        rendered[f"signed out {path}"] = client.get(path)
    for person in (assigner, assignee):
        sign_in(client, person)  # recent: the token, webhook and key pages ask otherwise
        for path in signed_in:
            rendered[f"{person.email} {path}"] = client.get(path)
    client.force_login(staff)
    for path in admin_pages(staff, pending):
        rendered[f"staff {path}"] = client.get(path)

    problems = {}
    for what, response in rendered.items():
        assert response.status_code in (200, 404), (what, response.status_code)
        assert_strict(response)
        if found := inline_code(response.content.decode()):
            problems[what] = found
    assert problems == {}
    assert len(rendered) >= 40


def test_the_api_reference_page_runs_only_scripts_from_urls(client):
    html = client.get("/api-reference").content.decode()
    scripts = re.findall(r"<script[^>]*>", html)
    # The bundle, the preset, the start-up script, and app.js (the app's frame).
    assert len(scripts) == 4
    assert all('src="' in tag for tag in scripts)
    assert 'src="/api-reference?script="' in html
    assert 'href="/static/css/api_reference.css"' in html


# --- built once (config.middleware.CSPMiddleware) -------------------------------------------


def _through_the_middleware(response, request=None):
    from config.middleware import CSPMiddleware

    request = request or RequestFactory().get("/api/v1/commitments")
    middleware = CSPMiddleware(lambda request: response)
    middleware.process_request(request)
    return middleware.process_response(request, response), request


def _django_csps(response, request=None):
    from csp.middleware import CSPMiddleware

    request = request or RequestFactory().get("/api/v1/commitments")
    middleware = CSPMiddleware(lambda request: response)
    middleware.process_request(request)
    return middleware.process_response(request, response)


def test_the_header_built_once_is_django_csps_own():
    from django.http import HttpResponse

    ours, _ = _through_the_middleware(HttpResponse())
    theirs = _django_csps(HttpResponse())

    assert ours["Content-Security-Policy"] == theirs["Content-Security-Policy"]
    assert "Content-Security-Policy-Report-Only" not in ours


def test_a_changed_policy_is_built_again(settings):
    from django.http import HttpResponse

    before, _ = _through_the_middleware(HttpResponse())
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": ["'none'"]}}
    settings.CONTENT_SECURITY_POLICY_REPORT_ONLY = {"DIRECTIVES": {"img-src": ["'self'"]}}
    after, _ = _through_the_middleware(HttpResponse())

    assert before["Content-Security-Policy"] != after["Content-Security-Policy"]
    assert after["Content-Security-Policy"] == "default-src 'none'"
    theirs = _django_csps(HttpResponse())
    assert (
        after["Content-Security-Policy-Report-Only"]
        == theirs["Content-Security-Policy-Report-Only"]
    )
    assert "img-src 'self'" in after["Content-Security-Policy-Report-Only"]


def test_a_response_with_a_policy_of_its_own_keeps_it():
    from django.http import HttpResponse

    response = HttpResponse()
    response._csp_update = {"img-src": ["https://images.example"]}
    ours, _ = _through_the_middleware(response)

    assert "https://images.example" in ours["Content-Security-Policy"]


def test_a_nonce_asked_for_is_in_the_header_and_one_asked_for_after_it_is_an_error(settings):
    from csp.constants import NONCE, SELF
    from csp.exceptions import CSPNonceError
    from django.http import HttpResponse

    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"script-src": [SELF, NONCE]}}

    request = RequestFactory().get("/")
    response = HttpResponse()
    from config.middleware import CSPMiddleware

    middleware = CSPMiddleware(lambda request: response)
    middleware.process_request(request)
    nonce = str(request.csp_nonce)
    middleware.process_response(request, response)

    assert f"'nonce-{nonce}'" in response["Content-Security-Policy"]
    assert str(request.csp_nonce) == nonce  # written, it stays what it was

    later = HttpResponse()
    _, plain = _through_the_middleware(later)
    with pytest.raises(CSPNonceError):
        str(plain.csp_nonce)


def test_an_exempt_response_gets_no_header():
    from django.http import HttpResponse

    response = HttpResponse()
    response._csp_exempt = True
    ours, _ = _through_the_middleware(response)

    assert "Content-Security-Policy" not in ours
