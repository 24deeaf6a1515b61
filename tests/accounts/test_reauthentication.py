"""Pages that need a recent sign-in (Model keys, Webhooks, API tokens) ask for
the password before the form is shown, and refuse a stale POST without
keeping any of it: no secret is ever parked in a session row (allauth's own
decorator would suspend the whole POST and META into the session)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from django.conf import settings as django_settings
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session

from accounts.reauth import STALE_POST_MESSAGE
from gather.models import ModelKey
from integrations.models import ApiToken
from tests.harness.api import PASSWORD, age_the_sign_in, sign_in
from tests.harness.webhook_pages import RECEIVER, endpoint_for, resolve_every_name_to
from webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.django_db

KEYS = "/settings/model-keys/"
WEBHOOKS = "/settings/webhooks/"
TOKENS = "/settings/tokens/"
PROVIDER_KEY = "sk-proj-parked-nowhere-secretpart-ZZ99"
HOOK_URL = "https://hooks.example.com/T0KEN-in-the-path-8f3a"
ELSEWHERE = "https://elsewhere.example.com/another-T0KEN-77c1"


@pytest.fixture(autouse=True)
def _production_network(settings, monkeypatch):
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    resolve_every_name_to(monkeypatch)


@pytest.fixture
def stale(client, assigner, settings):
    """Signed in through the form, long enough ago that the sign-in is old."""
    sign_in(client, assigner)
    age_the_sign_in(client, settings.ACCOUNT_REAUTHENTICATION_TIMEOUT + 1)
    return client


def every_session_decoded() -> list[str]:
    """Every django_session row, decoded (a row that does not decode fails the test)."""
    rows = []
    for row in Session.objects.all():
        decoded = SessionStore().decode(row.session_data)
        assert decoded, "a session row did not decode"
        rows.append(row.session_data + json.dumps(decoded))
    assert rows
    return rows


def assert_no_trace(*secrets: str) -> None:
    for row in every_session_decoded():
        for secret in secrets:
            assert secret not in row
        assert "account_reauthentication_state" not in row


def assert_sent_to_reauthenticate(response, back_to: str) -> None:
    assert response.status_code == 302
    location = urlsplit(response["Location"])
    assert location.path == "/accounts/reauthenticate/"
    assert parse_qs(location.query)["next"] == [back_to]


def stale_posts(client, assigner):
    """Each guarded form, sent after an old sign-in: (path, data, secrets in it)."""
    endpoint = endpoint_for(assigner, system="linear")
    return [
        (KEYS, {"provider": "openai", "key": PROVIDER_KEY, "model": ""}, [PROVIDER_KEY]),
        (WEBHOOKS, {"external_system": "jira", "url": HOOK_URL, "form_key": "k"}, [HOOK_URL]),
        (f"{WEBHOOKS}{endpoint.pk}/edit", {"url": ELSEWHERE}, [ELSEWHERE]),
        (f"{WEBHOOKS}{endpoint.pk}/rotate", {"form_key": "k"}, []),
        (TOKENS, {"name": "Jira", "form_key": "k"}, []),
    ]


def test_a_stale_post_is_refused_and_nothing_of_it_is_kept(stale, assigner):
    for path, data, secrets in stale_posts(stale, assigner):
        response = stale.post(path, data)

        assert_sent_to_reauthenticate(response, path)
        # Neither the secret nor the request (its META carries the session cookie).
        assert_no_trace(*secrets, stale.cookies[django_settings.SESSION_COOKIE_NAME].value)
    endpoint = WebhookEndpoint.objects.get()  # not registered, moved nor rotated
    assert (endpoint.external_system, endpoint.url, endpoint.previous_secret) == (
        "linear",
        RECEIVER,
        "",
    )
    assert not ModelKey.objects.exists()
    assert not ApiToken.objects.exists()


def test_after_the_password_the_person_is_back_at_the_empty_form(stale, assigner):
    refused = stale.post(KEYS, {"provider": "openai", "key": PROVIDER_KEY})

    asked = stale.get(refused["Location"])
    assert STALE_POST_MESSAGE in asked.content.decode()
    back = stale.post(refused["Location"], {"password": PASSWORD})
    assert back.status_code == 302 and back["Location"] == KEYS
    form = stale.get(KEYS)
    assert form.status_code == 200
    assert PROVIDER_KEY not in form.content.decode()
    assert not ModelKey.objects.exists()  # the refused POST was not replayed
    assert_no_trace(PROVIDER_KEY)

    # The form, now sent within the limit, stores the key.
    assert stale.post(KEYS, {"provider": "openai", "key": PROVIDER_KEY}).status_code == 302
    assert ModelKey.objects.get(user=assigner).key == PROVIDER_KEY
    assert_no_trace(PROVIDER_KEY)


@pytest.mark.parametrize("page", [KEYS, WEBHOOKS, TOKENS, "edit", "rotate"])
def test_the_password_is_asked_for_before_the_form_is_shown(stale, assigner, page):
    if page in ("edit", "rotate"):
        page = f"{WEBHOOKS}{endpoint_for(assigner).pk}/{page}"

    asked = stale.get(page)

    assert_sent_to_reauthenticate(asked, page)
    back = stale.post(asked["Location"], {"password": PASSWORD})
    assert back.status_code == 302 and back["Location"] == page
    assert stale.get(page).status_code == 200


def test_a_session_without_a_recorded_sign_in_is_asked_too(client, assigner):
    client.force_login(assigner)  # records no sign-in: as old as can be

    assert_sent_to_reauthenticate(client.get(KEYS), KEYS)
    assert_sent_to_reauthenticate(
        client.post(KEYS, {"provider": "openai", "key": PROVIDER_KEY}), KEYS
    )
    assert_no_trace(PROVIDER_KEY)
    assert not ModelKey.objects.exists()


def test_a_recent_sign_in_is_not_asked_again(client, assigner, settings):
    sign_in(client, assigner)
    age_the_sign_in(client, settings.ACCOUNT_REAUTHENTICATION_TIMEOUT - 30)

    assert client.get(KEYS).status_code == 200
    assert client.post(KEYS, {"provider": "openai", "key": PROVIDER_KEY}).status_code == 302
    assert ModelKey.objects.get(user=assigner).key == PROVIDER_KEY


def test_the_migration_takes_requests_parked_before_out_of_every_session(client, assigner):
    """What allauth's decorator left behind before this fix: a suspended POST
    in the session row. The migration removes it and keeps the sign-in."""
    import importlib
    from types import SimpleNamespace

    from allauth.account.internal.flows.reauthentication import suspend_request
    from django.apps import apps
    from django.db import connection
    from django.test import RequestFactory

    sign_in(client, assigner)
    other = SessionStore()
    other.update({"unrelated": "kept"})
    other.create()
    request = RequestFactory().post(KEYS, {"provider": "openai", "key": PROVIDER_KEY})
    request.session = SessionStore(client.session.session_key)
    suspend_request(request, "/accounts/reauthenticate/")
    request.session.save()
    assert any(PROVIDER_KEY in row for row in every_session_decoded())  # parked, as before

    migration = importlib.import_module("accounts.migrations.0003_sessions_without_parked_requests")
    migration.drop_parked_requests(apps, SimpleNamespace(connection=connection))

    assert_no_trace(PROVIDER_KEY)
    assert client.get(KEYS).status_code == 200  # still signed in, recently
    assert SessionStore(other.session_key).load() == {"unrelated": "kept"}
