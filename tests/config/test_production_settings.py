"""Production mode (DEBUG=0): a real SECRET_KEY or no start; HTTPS only except on
loopback hosts; HSTS; secure cookies.

What the settings module decides is checked in-process (`settings_for` runs
its code again with a given environment); that a bad environment stops a
process, and the production configuration end to end, in a fresh
interpreter; the middleware's behaviour in-process.
"""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from tests.harness.settings import REAL_FERNET_KEY, REAL_KEY, settings_for


def staticfiles_backend(values: dict) -> str:
    return values["STORAGES"]["staticfiles"]["BACKEND"]


# --- the settings module, in a fresh interpreter: it refuses to load, loudly ---------


@pytest.mark.processes
def test_production_refuses_to_start_without_a_secret_key(run_django):
    """config/settings.py applies config/environment.py's rules at import, and
    a process with a bad environment dies naming every problem."""
    result = run_django(DEBUG="0", API_RATE_BURST="5")

    assert result.returncode != 0
    assert "django.core.exceptions.ImproperlyConfigured" in result.stderr
    assert "needs SECRET_KEY set to a random value of 32+ characters" in result.stderr
    assert "API_RATE_BURST (calls at once) needs API_RATE_PER_MINUTE" in result.stderr


# --- what the settings module decides, in-process --------------------------------------


@pytest.mark.parametrize(
    "key",
    ["", "too-short", "dev-insecure-key-do-not-use-in-production"],
    ids=["empty", "short", "the-development-key"],
)
def test_production_refuses_a_key_that_is_not_real(tmp_path, key):
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY"):
        settings_for(tmp_path, DEBUG="0", SECRET_KEY=key)


def test_production_settings_load_without_an_encryption_key_for_the_check_to_report(tmp_path):
    """The refusal is a deployment check (tests/config/test_deployment_checks.py):
    the settings load, with no key, so `check --deploy` can say what to set."""
    values = settings_for(tmp_path, DEBUG="0", SECRET_KEY=REAL_KEY, FIELD_ENCRYPTION_KEYS="")

    assert values["FIELD_ENCRYPTION_KEYS"] == []


def test_a_rotated_secret_key_leaves_stored_secrets_readable(tmp_path):
    """The encryption keys never derive from SECRET_KEY."""
    from lib.crypto import decrypt_str, encrypt_str

    before = settings_for(tmp_path, DEBUG="0", SECRET_KEY=REAL_KEY)
    after = settings_for(tmp_path, DEBUG="0", SECRET_KEY="rotated-" + REAL_KEY)
    with override_settings(**{k: before[k] for k in ("SECRET_KEY", "FIELD_ENCRYPTION_KEYS")}):
        token = encrypt_str("secret")
    with override_settings(**{k: after[k] for k in ("SECRET_KEY", "FIELD_ENCRYPTION_KEYS")}):
        assert decrypt_str(token) == "secret"


@pytest.mark.parametrize("debug", ["0", "1"])
def test_an_encryption_key_that_is_not_a_fernet_key_is_refused(tmp_path, debug):
    with pytest.raises(ImproperlyConfigured, match="key 1 is not a Fernet key"):
        settings_for(tmp_path, DEBUG=debug, SECRET_KEY=REAL_KEY, FIELD_ENCRYPTION_KEYS="a phrase")


def test_production_starts_with_a_real_key_and_locks_things_down(tmp_path):
    values = settings_for(
        tmp_path,
        DEBUG="0",
        SECRET_KEY=REAL_KEY,
        ALLOWED_HOSTS="example.com",
        SITE_URL="https://example.com",
    )

    assert values["DEBUG"] is False
    assert values["HTTPS_ONLY"] is True
    assert values["SESSION_COOKIE_SECURE"] is True
    assert values["CSRF_COOKIE_SECURE"] is True
    assert values["SECURE_HSTS_SECONDS"] >= 31_536_000
    assert values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True
    # Hashed file names, so browsers may cache static files for good.
    assert staticfiles_backend(values).endswith("CompressedManifestStaticFilesStorage")


def test_production_serves_the_configured_hosts_and_loopback(tmp_path):
    values = settings_for(tmp_path, DEBUG="0", SECRET_KEY=REAL_KEY, ALLOWED_HOSTS="example.com")

    assert values["ALLOWED_HOSTS"] == ["example.com", "localhost", "127.0.0.1", "[::1]"]


def test_debug_is_off_unless_set(tmp_path):
    """A deployment that forgets DEBUG=0 is in production mode: without a
    real SECRET_KEY it does not start, rather than run on the public one."""
    with pytest.raises(ImproperlyConfigured, match="needs SECRET_KEY"):
        settings_for(tmp_path, DEBUG=None)

    values = settings_for(tmp_path, DEBUG=None, SECRET_KEY=REAL_KEY)
    assert values["DEBUG"] is False
    assert values["FIELD_ENCRYPTION_KEYS"] == [REAL_FERNET_KEY]  # never the public one


def test_development_mode_needs_nothing_and_stays_on_plain_http(tmp_path):
    values = settings_for(tmp_path, DEBUG="1")

    assert values["DEBUG"] is True
    assert values["HTTPS_ONLY"] is False
    assert values["SESSION_COOKIE_SECURE"] is False
    assert values["SECURE_HSTS_SECONDS"] == 0


def test_a_local_site_in_production_mode_keeps_its_cookies_on_plain_http(tmp_path):
    """The quick start: DEBUG off, reached as localhost over plain HTTP (which
    HTTPS_ONLY allows for loopback), so its cookies cannot be Secure-only."""
    values = settings_for(tmp_path, DEBUG="0", SECRET_KEY=REAL_KEY)

    assert values["LOCAL_SITE"] is True
    assert values["HTTPS_ONLY"] is True
    assert values["SESSION_COOKIE_SECURE"] is False
    assert values["CSRF_COOKIE_SECURE"] is False


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DEBUG", "maybe", "DEBUG must be a boolean"),
        ("HTTPS_ONLY", "sometimes", "HTTPS_ONLY must be a boolean"),
        ("SECURE_HSTS_SECONDS", "a year", "SECURE_HSTS_SECONDS must be an integer"),
    ],
)
def test_a_malformed_variable_stops_the_start_with_its_name(tmp_path, name, value, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        settings_for(tmp_path, **{name: value, "SECRET_KEY": REAL_KEY})


END_TO_END = """
import json, re
from django.core.management import call_command
from django.test import Client
call_command("collectstatic", interactive=False, verbosity=0)  # as the Dockerfile does
# As a deployment does before it serves (the sign-in page reads the SSO providers).
call_command("migrate", interactive=False, verbosity=0)
c = Client()
out = {}
r = c.get("/dashboard/?x=1", HTTP_HOST="example.com")
out["page"] = [r.status_code, r.get("Location")]
r = c.post("/api/v1/inbox", data="{}", content_type="application/json", HTTP_HOST="example.com")
out["api"] = [r.status_code, r.json(), r.get("Location")]
r = c.get("/healthz", HTTP_HOST="localhost:3000")
out["loopback"] = [r.status_code, r.get("Strict-Transport-Security")]
r = c.get("/healthz", HTTP_HOST="example.com", secure=True)
out["secure"] = [r.status_code, r.get("Strict-Transport-Security")]
r = c.get("/accounts/login/", HTTP_HOST="example.com", secure=True)
out["cookie_secure"] = bool(r.cookies["csrftoken"]["secure"])
css = re.search(r'href="(/static/css/app[.][0-9a-f]+[.]css)"', r.content.decode()).group(1)
r = c.get(css, HTTP_HOST="example.com", secure=True)
out["css"] = [r.status_code, r.get("Cache-Control")]
print(json.dumps(out))
"""


@pytest.mark.processes
def test_production_configuration_end_to_end(run_django, tmp_path):
    """The real production settings in a fresh process: static files collected as the
    Dockerfile does and the database migrated, then one request of each kind."""
    result = run_django(
        END_TO_END,
        DEBUG="0",
        SECRET_KEY=REAL_KEY,
        ALLOWED_HOSTS="example.com",
        STATIC_ROOT=str(tmp_path / "static"),
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])

    assert out["page"] == [301, "https://example.com/dashboard/?x=1"]
    assert out["api"][0] == 403
    assert out["api"][1]["error"] == "https_required"
    assert out["api"][2] is None
    assert out["loopback"] == [200, None]
    assert out["secure"][0] == 200
    assert out["secure"][1].startswith("max-age=31536000")
    assert out["cookie_secure"] is True
    # The stylesheet is served by the app itself, under a hashed name, cached for good.
    assert out["css"][0] == 200
    assert "immutable" in out["css"][1]


# --- the HTTPS middleware, in-process --------------------------------------------------

HTTPS = {
    "HTTPS_ONLY": True,
    "ALLOWED_HOSTS": [
        "example.com",
        "localhost",
        "127.0.0.1",
        "127.0.0.5",
        "[::1]",
        "localhost.example.com",
    ],
    "SECURE_HSTS_SECONDS": 31_536_000,
}


# A page (not a probe route: those answer over plain HTTP, tests/config/test_probes.py).
PAGE = "/accounts/login/"


@pytest.fixture
def https_only():
    with override_settings(**HTTPS):
        yield


@pytest.mark.usefixtures("https_only")
class TestHttpsOnlyMiddleware:
    def test_a_page_on_a_public_host_redirects_to_https(self, client):
        response = client.get("/settings/?tab=1", HTTP_HOST="example.com")

        assert response.status_code == 301
        assert response["Location"] == "https://example.com/settings/?tab=1"

    def test_the_api_on_a_public_host_answers_403_https_required(self, client):
        response = client.post(
            "/api/v1/inbox", data="{}", content_type="application/json", HTTP_HOST="example.com"
        )

        assert response.status_code == 403
        assert response["Content-Type"].startswith("application/json")
        assert response.json()["error"] == "https_required"
        assert "Location" not in response

    def test_the_api_is_refused_for_any_method(self, client):
        response = client.get("/api/v1/sync", HTTP_HOST="example.com")

        assert response.status_code == 403
        assert response.json()["error"] == "https_required"

    @pytest.mark.django_db
    @pytest.mark.parametrize(
        "host",
        ["localhost", "localhost:3000", "127.0.0.1", "127.0.0.5:8000", "[::1]", "[::1]:3000"],
    )
    def test_loopback_hosts_are_served_on_plain_http(self, client, host):
        response = client.get("/healthz", HTTP_HOST=host)

        assert response.status_code == 200
        assert "Strict-Transport-Security" not in response

    @pytest.mark.parametrize(
        "host", ["evil.example.net", "example.com@evil.example.net", "example.com.evil.net"]
    )
    def test_a_forged_host_gets_400_never_a_redirect_to_it(self, client, host):
        response = client.get("/settings/", HTTP_HOST=host)

        assert response.status_code == 400
        assert "Location" not in response

    @pytest.mark.parametrize("path", ["/settings/", "/api/v1/sync"])
    def test_a_remote_client_saying_localhost_is_not_served_plain_http(self, client, path):
        response = client.get(path, HTTP_HOST="localhost", REMOTE_ADDR="203.0.113.9")

        assert response.status_code == (403 if path.startswith("/api/") else 301)
        if response.status_code == 301:
            assert response["Location"] == "https://localhost/settings/"
        else:
            assert response.json()["error"] == "https_required"

    def test_a_name_that_only_starts_like_localhost_is_not_loopback(self, client):
        response = client.get("/settings/", HTTP_HOST="localhost.example.com")

        assert response.status_code == 301

    @pytest.mark.django_db
    def test_secure_responses_carry_hsts(self, client):
        response = client.get("/healthz", HTTP_HOST="example.com", secure=True)

        assert response.status_code == 200
        assert response["Strict-Transport-Security"].startswith("max-age=31536000")

    @pytest.mark.django_db
    def test_a_forwarded_proto_is_ignored_unless_trusted(self, client):
        response = client.get(PAGE, HTTP_HOST="example.com", HTTP_X_FORWARDED_PROTO="https")

        assert response.status_code == 301

    @pytest.mark.django_db
    def test_a_forwarded_proto_counts_when_trusted(self, client, settings):
        settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
        settings.TRUSTED_PROXY_NETWORKS = ["127.0.0.1/32"]  # the test client's peer

        response = client.get(PAGE, HTTP_HOST="example.com", HTTP_X_FORWARDED_PROTO="https")

        assert response.status_code == 200

    @pytest.mark.django_db
    def test_a_forwarded_proto_from_outside_the_proxy_networks_is_ignored(self, client, settings):
        """A client that reaches the app port directly is not believed when it
        says its plain HTTP request came over HTTPS."""
        settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
        settings.TRUSTED_PROXY_NETWORKS = ["10.0.0.0/24"]

        says_https = {"HTTP_HOST": "example.com", "HTTP_X_FORWARDED_PROTO": "https"}

        for peer in ("198.51.100.7", "127.0.0.1"):
            assert client.get(PAGE, **says_https, REMOTE_ADDR=peer).status_code == 301
        assert client.get(PAGE, **says_https, REMOTE_ADDR="10.0.0.2").status_code == 200


@pytest.mark.django_db
def test_without_https_only_public_hosts_get_plain_http(client, settings):
    settings.HTTPS_ONLY = False
    settings.ALLOWED_HOSTS = ["example.com"]

    assert client.get("/healthz", HTTP_HOST="example.com").status_code == 200
