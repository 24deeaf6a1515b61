"""allauth's sign-in limits where they can be bypassed: the admin's own login
page, and the client's address behind a proxy; and the shared cache they
count in (Redis when configured, the database otherwise)."""

from __future__ import annotations

import io

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import connection

from tests.harness.settings import REAL_KEY, settings_for

LOGIN = "/accounts/login/"
PASSWORD = "correct horse battery"  # make_user's
LIMITED = "Too many failed login attempts"


def failed_sign_in(client, email: str, **headers: str):
    return client.post(LOGIN, {"login": email, "password": "wrong"}, headers=headers)


def is_limited(response) -> bool:
    return LIMITED in response.content.decode()


# --- the admin's login ------------------------------------------------------------------


def test_the_admin_login_page_signs_nobody_in(client, staff):
    response = client.post(
        "/admin/login/?next=/admin/", {"username": staff.email, "password": PASSWORD}
    )

    assert response.status_code == 302
    assert response["Location"].startswith(LOGIN)
    assert client.get("/admin/").status_code == 302  # still signed out


def test_the_admin_login_cannot_bypass_the_sign_in_limit(client, staff):
    for _ in range(5):  # allauth: 5 failures per address in 5 minutes
        failed_sign_in(client, staff.email)
    assert is_limited(client.post(LOGIN, {"login": staff.email, "password": PASSWORD}))

    # The admin's form with the right password does not sign in either.
    client.post("/admin/login/", {"username": staff.email, "password": PASSWORD})

    assert client.get("/admin/").status_code == 302
    assert "_auth_user_id" not in client.session


def test_the_admin_login_page_sends_visitors_to_the_sign_in_and_back(client, db):
    response = client.get("/admin/login/?next=/admin/audit/")

    assert response.status_code == 302
    assert response["Location"] == f"{LOGIN}?next=%2Fadmin%2Faudit%2F"


def test_staff_signed_in_through_allauth_reach_the_admin(client, staff):
    response = client.post(LOGIN, {"login": staff.email, "password": PASSWORD})
    assert response.status_code == 302

    assert client.get("/admin/").status_code == 200


def test_signed_in_non_staff_are_refused_by_the_admin_login(client, assigner):
    client.force_login(assigner)

    assert client.get("/admin/login/").status_code == 403


# --- the client's address behind a proxy -------------------------------------------------
# allauth counts 10 failed sign-ins a minute per address, whatever the e-mail.


def spend_address_limit(client, **headers: str) -> None:
    for n in range(10):
        assert not is_limited(failed_sign_in(client, f"guess{n}@example.com", **headers))
    assert is_limited(failed_sign_in(client, "guess@example.com", **headers))


# The test client's peer address: where the tests' proxy connects from.
PROXY_NETWORKS = ["127.0.0.1/32"]


def test_behind_a_trusted_proxy_the_limit_counts_per_client_address(client, db, settings):
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 1  # our proxy appends the address it saw
    settings.TRUSTED_PROXY_NETWORKS = PROXY_NETWORKS
    spend_address_limit(client, X_Forwarded_For="203.0.113.5")

    # Another client behind the same proxy (the same REMOTE_ADDR) is not limited...
    assert not is_limited(
        failed_sign_in(client, "other@example.com", X_Forwarded_For="198.51.100.7")
    )
    # ...and the limited one cannot escape by prepending an address of its choice.
    spoofed = failed_sign_in(client, "again@example.com", X_Forwarded_For="10.1.1.1, 203.0.113.5")
    assert is_limited(spoofed)


def test_a_trusted_client_ip_header_names_the_client(client, db, settings):
    settings.ALLAUTH_TRUSTED_CLIENT_IP_HEADER = "X-Real-IP"
    settings.TRUSTED_PROXY_NETWORKS = PROXY_NETWORKS
    spend_address_limit(client, X_Real_IP="203.0.113.5")

    assert not is_limited(failed_sign_in(client, "other@example.com", X_Real_IP="198.51.100.7"))


def test_with_no_trusted_proxy_x_forwarded_for_is_ignored(client, db, settings):
    assert settings.ALLAUTH_TRUSTED_PROXY_COUNT == 0
    spend_address_limit(client, X_Forwarded_For="203.0.113.5")

    # A client that makes up another address is the same client.
    assert is_limited(failed_sign_in(client, "other@example.com", X_Forwarded_For="198.51.100.7"))


def test_a_client_that_skips_the_proxy_cannot_escape_the_limit(client, db, settings):
    """The same rule as the API tokens' networks (lib.client_address): a peer
    outside TRUSTED_PROXY_NETWORKS is counted by its own address, whatever
    X-Forwarded-For it makes up."""
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 1
    settings.TRUSTED_PROXY_NETWORKS = ["10.0.0.0/24"]  # not the test client's 127.0.0.1
    spend_address_limit(client, X_Forwarded_For="203.0.113.5")

    assert is_limited(failed_sign_in(client, "other@example.com", X_Forwarded_For="198.51.100.7"))


# --- settings ---------------------------------------------------------------------------


def test_the_proxy_settings_come_from_the_environment(tmp_path):
    default = settings_for(tmp_path)
    assert default["ALLAUTH_TRUSTED_PROXY_COUNT"] == 0
    assert default["ALLAUTH_TRUSTED_CLIENT_IP_HEADER"] is None

    assert default["TRUSTED_PROXY_NETWORKS"] == []

    behind = settings_for(
        tmp_path,
        TRUSTED_PROXY_COUNT="2",
        TRUSTED_CLIENT_IP_HEADER="X-Real-IP",
        TRUSTED_PROXY_NETWORKS="10.0.0.0/24, ::ffff:192.0.2.0/120",
    )
    assert behind["ALLAUTH_TRUSTED_PROXY_COUNT"] == 2
    assert behind["ALLAUTH_TRUSTED_CLIENT_IP_HEADER"] == "X-Real-IP"
    assert behind["TRUSTED_PROXY_NETWORKS"] == ["10.0.0.0/24", "192.0.2.0/24"]


def test_the_cache_is_redis_when_configured_and_the_database_otherwise(tmp_path):
    embedded = settings_for(tmp_path)["CACHES"]["default"]
    assert embedded["BACKEND"] == "django.core.cache.backends.db.DatabaseCache"

    production = settings_for(tmp_path, REDIS_URL="redis://cache.internal:6379/0")
    assert production["CACHES"]["default"]["BACKEND"] == "lib.cache.TolerantRedisCache"
    assert production["CACHES"]["default"]["LOCATION"] == "redis://cache.internal:6379/0"


@pytest.mark.parametrize("burst, rate", [("5", ""), ("5", "0"), ("-1", "10")])
def test_an_api_limit_without_a_rate_fails_at_start(tmp_path, burst, rate):
    with pytest.raises(ImproperlyConfigured, match="API_RATE_PER_MINUTE"):
        settings_for(tmp_path, API_RATE_BURST=burst, API_RATE_PER_MINUTE=rate, SECRET_KEY=REAL_KEY)


@pytest.mark.django_db
def test_migrate_creates_the_database_caches_table(settings):
    """Wherever the service starts (`./scripts/serve`, the container), it migrates
    first; that alone makes the table (as it did for this test's database), and
    `createcachetable` (which looks at the database caches configured, as
    without REDIS_URL) finds it there."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "django_cache",
        }
    }
    out = io.StringIO()
    call_command("createcachetable", dry_run=True, stdout=out)

    assert "django_cache" in connection.introspection.table_names()
    assert out.getvalue().splitlines() == ["Cache table 'django_cache' already exists."]


def test_the_database_cache_works_on_that_table(db, settings):
    from django.core.cache import caches

    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "django_cache",
        }
    }
    cache = caches.create_connection("default")
    cache.set("k", {"v": 1}, 60)
    assert cache.get("k") == {"v": 1}
