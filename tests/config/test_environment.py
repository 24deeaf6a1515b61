"""The environment's rules (config/environment.py), in-process: a malformed
variable is named, production needs a real SECRET_KEY, encryption keys must be
Fernet keys in any mode, limits must not contradict each other. Every
problem is reported at once. That config/settings.py applies them at import
(and fails loudly) is proved in a fresh interpreter, once, in
tests/config/test_production_settings.py."""

from __future__ import annotations

import pytest

from config.environment import DEV_SECRET_KEY, environment_problems
from tests.harness.settings import REAL_FERNET_KEY, REAL_KEY

PRODUCTION = {"DEBUG": "0", "SECRET_KEY": REAL_KEY, "FIELD_ENCRYPTION_KEYS": REAL_FERNET_KEY}
DEVELOPMENT = {"DEBUG": "1"}


def test_nothing_set_is_production_mode_and_asks_for_a_key():
    """DEBUG is off unless set: a deployment that forgets it never runs on the
    public development keys; someone on their own machine is told how to get
    development mode."""
    (problem,) = environment_problems({})

    assert problem.startswith(
        "Production mode (DEBUG=0) needs SECRET_KEY set to a random value of 32+ characters. "
        "DEBUG is off unless set: for development on this machine set DEBUG=1"
    )
    assert "./scripts/manage" in problem


def test_development_mode_needs_nothing_else():
    assert environment_problems(DEVELOPMENT) == []


@pytest.mark.parametrize(
    "elsewhere",
    [
        {"SITE_URL": "https://commitments.example.com"},
        {"ALLOWED_HOSTS": "localhost,commitments.example.com"},
        {"SITE_URL": "http://192.0.2.10:3000"},
    ],
    ids=["site-url", "allowed-host", "lan-address"],
)
def test_debug_is_refused_for_a_site_others_reach(elsewhere):
    (problem,) = environment_problems({**DEVELOPMENT, **elsewhere})

    assert problem.startswith("DEBUG=1 is for a site on this machine only")
    assert "set DEBUG=0 and a real SECRET_KEY" in problem


@pytest.mark.parametrize(
    "site",
    [
        "http://localhost:3000",
        "http://127.0.0.1:8000/",
        "http://[::1]:3000",
        "http://app.localhost",
    ],
)
def test_debug_is_fine_for_a_site_on_this_machine(site):
    assert (
        environment_problems({**DEVELOPMENT, "SITE_URL": site, "ALLOWED_HOSTS": "127.0.0.1"}) == []
    )


def test_a_real_production_environment_has_no_problem():
    assert environment_problems(PRODUCTION) == []


@pytest.mark.parametrize(
    "url", ["sqlite:////tmp/db.sqlite3", "mysql://root@127.0.0.1/db", "127.0.0.1:5432"]
)
def test_a_database_url_that_is_not_postgresql_is_refused(url):
    """The service's PostgreSQL options (statements prepared on the server)
    would otherwise reach another driver, which fails on its first connection
    with a TypeError; unset, the service has its own SQLite."""
    assert environment_problems({**DEVELOPMENT, "DATABASE_URL": url}) == [
        "DATABASE_URL names PostgreSQL only (postgres://user:password@host:5432/name); "
        "unset, the service keeps its own SQLite database in var/."
    ]


@pytest.mark.parametrize("scheme", ["postgres", "postgresql", "pgsql"])
def test_a_postgresql_database_url_is_taken(scheme):
    url = f"{scheme}://postgres@127.0.0.1:5432/commitments"
    assert environment_problems({**DEVELOPMENT, "DATABASE_URL": url}) == []


def test_production_without_a_secret_key_is_refused():
    problems = environment_problems({"DEBUG": "0"})

    assert problems == [
        "Production mode (DEBUG=0) needs SECRET_KEY set to a random value of 32+ characters."
    ]


@pytest.mark.parametrize(
    "key", ["", "too-short", DEV_SECRET_KEY], ids=["empty", "short", "the-development-key"]
)
def test_production_refuses_a_key_that_is_not_real(key):
    (problem,) = environment_problems({"DEBUG": "0", "SECRET_KEY": key})

    assert "SECRET_KEY" in problem


def test_development_takes_any_key():
    assert environment_problems({"DEBUG": "1", "SECRET_KEY": "short"}) == []


def test_production_may_load_without_an_encryption_key_for_the_check_to_report():
    """The refusal is a deployment check (tests/config/test_deployment_checks.py)."""
    assert environment_problems({**PRODUCTION, "FIELD_ENCRYPTION_KEYS": ""}) == []


@pytest.mark.parametrize("debug", ["0", "1"])
def test_an_encryption_key_that_is_not_a_fernet_key_is_refused(debug):
    environ = {**PRODUCTION, "DEBUG": debug, "FIELD_ENCRYPTION_KEYS": f"{REAL_FERNET_KEY},a phrase"}

    (problem,) = environment_problems(environ)

    assert problem.startswith("FIELD_ENCRYPTION_KEYS: key 2 is not a Fernet key")
    assert "make one with:" in problem


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DEBUG", "maybe", "DEBUG must be a boolean (1/0, true/false), got 'maybe'"),
        ("HTTPS_ONLY", "sometimes", "HTTPS_ONLY must be a boolean"),
        ("OUTBOUND_ALLOW_LOOPBACK", "2", "OUTBOUND_ALLOW_LOOPBACK must be a boolean"),
        ("SECURE_HSTS_SECONDS", "a year", "SECURE_HSTS_SECONDS must be an integer, got 'a year'"),
        ("EMAIL_PORT", "smtp", "EMAIL_PORT must be an integer"),
        ("NUDGE_CAP", "1.5", "NUDGE_CAP must be an integer"),
    ],
)
def test_a_malformed_variable_is_named(name, value, message):
    (problem,) = environment_problems({name: value, "SECRET_KEY": REAL_KEY})

    assert problem.startswith(message)


def test_every_variable_the_settings_read_as_a_number_or_flag_is_checked():
    """A variable config/settings.py reads with env_bool or env_int and the
    rules do not know would fail at import without the others' messages."""
    import re
    from pathlib import Path

    from config import environment

    source = (Path(environment.__file__).parent / "settings.py").read_text()
    read = set(re.findall(r'env_(?:bool|int)\(\s*"([A-Z_]+)"', source))  # a call may wrap

    assert read == set(environment.BOOLEANS) | set(environment.INTEGERS)


@pytest.mark.parametrize(("burst", "rate"), [("5", ""), ("5", "0"), ("-1", "10")])
def test_an_api_limit_without_a_rate_is_refused(burst, rate):
    (problem,) = environment_problems(
        {**DEVELOPMENT, "API_RATE_BURST": burst, "API_RATE_PER_MINUTE": rate}
    )

    assert "API_RATE_PER_MINUTE" in problem


def test_an_api_limit_with_a_rate_is_taken():
    environ = {**DEVELOPMENT, "API_RATE_BURST": "5", "API_RATE_PER_MINUTE": "60"}
    assert environment_problems(environ) == []


@pytest.mark.parametrize(
    "variable", ["WEBHOOK_MAX_ENDPOINTS", "WEBHOOK_USER_IN_FLIGHT"], ids=["endpoints", "flight"]
)
def test_webhook_limits_below_one_are_refused(variable):
    (problem,) = environment_problems({**DEVELOPMENT, variable: "0"})

    assert problem == "WEBHOOK_MAX_ENDPOINTS and WEBHOOK_USER_IN_FLIGHT must be 1 or more."


def test_every_problem_is_reported_at_once():
    problems = environment_problems(
        {"DEBUG": "0", "FIELD_ENCRYPTION_KEYS": "nope", "API_RATE_BURST": "3"}
    )

    assert [p.split()[0] for p in problems] == [
        "Production",
        "FIELD_ENCRYPTION_KEYS:",
        "API_RATE_BURST",
    ]


def test_it_reads_only_the_mapping_it_is_given(monkeypatch):
    monkeypatch.setenv("DEBUG", "maybe")

    assert environment_problems(DEVELOPMENT) == []
    assert environment_problems() == ["DEBUG must be a boolean (1/0, true/false), got 'maybe'"]


# --- proxies: what is believed from them, and from where ---------------------------------


@pytest.mark.parametrize(
    ("trusting", "named"),
    [
        ({"TRUSTED_PROXY_COUNT": "1"}, "TRUSTED_PROXY_COUNT=1"),
        ({"TRUSTED_CLIENT_IP_HEADER": "X-Real-IP"}, "TRUSTED_CLIENT_IP_HEADER=X-Real-IP"),
        ({"TRUST_X_FORWARDED_PROTO": "1"}, "TRUST_X_FORWARDED_PROTO=1"),
    ],
)
def test_trusting_a_proxy_header_needs_the_proxies_networks(trusting, named):
    (problem,) = environment_problems({**PRODUCTION, **trusting})

    assert problem.startswith(f"{named} without TRUSTED_PROXY_NETWORKS")
    assert "set TRUSTED_PROXY_NETWORKS" in problem
    with_networks = {**PRODUCTION, **trusting, "TRUSTED_PROXY_NETWORKS": "10.0.0.0/24,::1"}
    assert environment_problems(with_networks) == []


def test_proxy_networks_are_checked_and_named():
    environ = {**PRODUCTION, "TRUSTED_PROXY_COUNT": "1", "TRUSTED_PROXY_NETWORKS": "10.0.0.0/33"}

    (problem,) = environment_problems(environ)

    assert problem.startswith("TRUSTED_PROXY_NETWORKS: “10.0.0.0/33” is not an IP network")


def test_proxy_networks_with_nothing_to_believe_from_them_are_refused():
    (problem,) = environment_problems({**PRODUCTION, "TRUSTED_PROXY_NETWORKS": "10.0.0.0/24"})

    assert "nothing is read from those proxies" in problem


def test_a_negative_proxy_count_is_refused():
    environ = {**PRODUCTION, "TRUSTED_PROXY_COUNT": "-1", "TRUSTED_PROXY_NETWORKS": "10.0.0.0/24"}

    assert "TRUSTED_PROXY_COUNT must be 0 (no proxy) or more." in environment_problems(environ)
