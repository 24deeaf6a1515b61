"""Pages answer errors with the site's own pages, never a stack trace."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from django.urls import path

from config.urls import urlpatterns as project_urls


def boom(request):
    raise RuntimeError("secret internals")


urlpatterns = [path("boom/", boom), path("api/boom/", boom), *project_urls]

pytestmark = pytest.mark.django_db


def test_an_unknown_page_gets_the_designed_404(client, assignee):
    client.force_login(assignee)
    response = client.get(f"/commitments/{uuid.uuid4()}")
    assert response.status_code == 404
    body = response.content.decode()
    assert "Not found" in body
    assert 'href="/dashboard/"' in body  # the site's navigation, not Django's bare page


@pytest.mark.urls("tests.config.test_error_pages")
def test_a_crash_on_a_page_gets_the_designed_500_without_internals():
    response = Client(raise_request_exception=False).get("/boom/")
    assert response.status_code == 500
    body = response.content.decode()
    assert "Something went wrong" in body
    assert "secret internals" not in body
    assert "Traceback" not in body


@pytest.mark.urls("tests.config.test_error_pages")
def test_a_crash_on_an_api_route_is_the_json_envelope():
    response = Client(raise_request_exception=False).post("/api/boom/")
    assert response.status_code == 500
    assert response.json() == {
        "error": "internal_error",
        "message": "Something went wrong on our side.",
    }
