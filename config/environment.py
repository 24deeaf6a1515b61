"""The rules the environment must keep, as a pure function of it.

`config/settings.py` calls `environment_problems(os.environ)` before it reads
anything and refuses to load (ImproperlyConfigured, every problem named) when
the list is not empty; so a web process, a worker or a management command
with a malformed or unsafe environment never starts. The function reads only
the mapping it is given, so its rules are tested in-process
(tests/config/test_environment.py). What production needs beyond these
(a real mail backend, Redis, an encryption key) is a deployment check
(config/checks.py), reported by `manage.py check --deploy` with the rest.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from config.env import ImproperlyConfiguredEnv, env_bool, env_int, env_list, env_str
from lib.client_address import normalise_network
from lib.crypto import MAKE_A_KEY, is_fernet_key
from lib.outbound import is_loopback_host

# The development SECRET_KEY (settings' default): refused in production.
DEV_SECRET_KEY = "dev-insecure-key-do-not-use-in-production"
# Development only (DEBUG on, no FIELD_ENCRYPTION_KEYS): a fixed, public key
# (the one earlier versions derived from the development SECRET_KEY, so a
# local database stays readable; scripts/_local_env.sh keeps it as a second,
# decrypt-only key for a quick start's database made before it had its own).
DEV_FIELD_ENCRYPTION_KEY = "a2_SwxOOwNH_iqxCqo2XnWmbuTvoCEuIykasFi-UrUo="
DEFAULT_SITE_URL = "http://localhost:3000"
# Said when DEBUG is not set at all: someone working on this machine, who
# probably meant development mode.
DEBUG_IS_OFF_HINT = (
    " DEBUG is off unless set: for development on this machine set DEBUG=1, or run "
    "manage.py through ./scripts/manage (the quick start's keys, in var/)."
)


def is_local_site(environ: Mapping[str, str] = os.environ) -> bool:
    """The site is reached on this machine only: SITE_URL's host and every
    name in ALLOWED_HOSTS are loopback (Django answers any other Host 400), as
    in development and the quick start (./scripts/serve). DEBUG is allowed
    only there, and production's deployment checks that only matter to other
    people (mail that reaches them, a broker shared across machines)
    are not asked of it (config/checks.py)."""
    site = env_str("SITE_URL", DEFAULT_SITE_URL, environ=environ)
    hosts = env_list("ALLOWED_HOSTS", environ=environ)
    return is_loopback_host(urlsplit(site).netloc.rsplit("@", 1)[-1]) and all(
        is_loopback_host(host) for host in hosts
    )


# Every boolean and integer variable the settings read: a malformed one stops
# the start with its name.
BOOLEANS: tuple[str, ...] = ("DEBUG", "HTTPS_ONLY", "TRUST_X_FORWARDED_PROTO", "EMAIL_USE_TLS")
BOOLEANS += ("OUTBOUND_ALLOW_LOOPBACK", "LOG_JSON", "DB_DISABLE_SERVER_SIDE_CURSORS")
BOOLEANS += ("DB_PREPARED_STATEMENTS",)
BOOLEANS += ("ADMIN_REQUIRES_MFA", "WORKER_OUTBOX_IDLE")
INTEGERS = (
    "SECURE_HSTS_SECONDS",
    "DB_CONN_MAX_AGE",
    "TRUSTED_PROXY_COUNT",
    "EMAIL_PORT",
    "EMAIL_TIMEOUT",
    "API_RATE_BURST",
    "API_RATE_PER_MINUTE",
    "GATHER_PROVIDER_TIMEOUT",
    "GATHER_RATE_BURST",
    "GATHER_RATE_PER_HOUR",
    "BROKER_TIMEOUT",
    "WEBHOOK_MAX_ENDPOINTS",
    "WEBHOOK_USER_IN_FLIGHT",
    "NUDGE_CAP",
    "NUDGE_COALESCE_WINDOW",
    "DIGEST_HOUR",
    "INVITATIONS_PER_DAY",
)

# dj_database_url's names for PostgreSQL's backend.
POSTGRESQL_SCHEMES = frozenset({"postgres", "postgresql", "pgsql"})


def environment_problems(environ: Mapping[str, str] = os.environ) -> list[str]:
    """What is wrong with `environ` for config/settings.py, one message per
    problem (naming the variable and what to set); empty when it may load."""
    problems = []
    for name in BOOLEANS:
        try:
            env_bool(name, environ=environ)
        except ImproperlyConfiguredEnv as exc:
            problems.append(str(exc))
    for name in INTEGERS:
        try:
            env_int(name, 0, environ=environ)
        except ImproperlyConfiguredEnv as exc:
            problems.append(str(exc))
    if problems:
        return problems  # the rules below read these variables

    debug = env_bool("DEBUG", default=False, environ=environ)
    if debug and not is_local_site(environ):
        problems.append(
            "DEBUG=1 is for a site on this machine only: it shows Django's debug pages "
            "(settings, every URL) to anyone and runs with the public development keys. "
            "With SITE_URL or ALLOWED_HOSTS naming another host, set DEBUG=0 and a real "
            "SECRET_KEY."
        )
    secret_key = env_str("SECRET_KEY", DEV_SECRET_KEY, environ=environ)
    if not debug and (secret_key == DEV_SECRET_KEY or len(secret_key) < 32):
        problems.append(
            "Production mode (DEBUG=0) needs SECRET_KEY set to a random value of 32+ characters."
            + ("" if "DEBUG" in environ else DEBUG_IS_OFF_HINT)
        )
    keys = env_list("FIELD_ENCRYPTION_KEYS", environ=environ)
    if bad_keys := [i + 1 for i, key in enumerate(keys) if not is_fernet_key(key)]:
        problems.append(
            f"FIELD_ENCRYPTION_KEYS: key {bad_keys[0]} is not a Fernet key (URL-safe base64 of "
            f"32 bytes); make one with: {MAKE_A_KEY}"
        )
    database_url = env_str("DATABASE_URL", environ=environ)
    if database_url and urlsplit(database_url).scheme not in POSTGRESQL_SCHEMES:
        problems.append(
            "DATABASE_URL names PostgreSQL only (postgres://user:password@host:5432/name); "
            "unset, the service keeps its own SQLite database in var/."
        )
    burst = env_int("API_RATE_BURST", 0, environ=environ)
    per_minute = env_int("API_RATE_PER_MINUTE", 0, environ=environ)
    if burst < 0 or (burst and per_minute < 1):
        problems.append(
            "API_RATE_BURST (calls at once) needs API_RATE_PER_MINUTE (calls a minute, 1 or more)."
        )
    endpoints = env_int("WEBHOOK_MAX_ENDPOINTS", 20, environ=environ)
    in_flight = env_int("WEBHOOK_USER_IN_FLIGHT", 2, environ=environ)
    if endpoints < 1 or in_flight < 1:
        problems.append("WEBHOOK_MAX_ENDPOINTS and WEBHOOK_USER_IN_FLIGHT must be 1 or more.")
    if env_int("NUDGE_COALESCE_WINDOW", 180, environ=environ) < 0:
        problems.append("NUDGE_COALESCE_WINDOW is seconds: 0 (each nudge at once) or more.")
    if not 0 <= env_int("DIGEST_HOUR", 8, environ=environ) <= 23:
        problems.append("DIGEST_HOUR is an hour of the day: 0 to 23.")
    problems += _proxy_problems(environ)
    return problems


def _proxy_problems(environ: Mapping[str, str]) -> list[str]:
    """What is believed from a proxy (the client's address, the scheme) is
    believed only from TRUSTED_PROXY_NETWORKS (lib.client_address): trusting a
    header without saying where the proxies are would believe it from anyone
    who reaches the app port, so it stops the start."""
    problems = []
    networks = env_list("TRUSTED_PROXY_NETWORKS", environ=environ)
    for text in networks:
        try:
            normalise_network(text)
        except ValueError as exc:
            problems.append(f"TRUSTED_PROXY_NETWORKS: {exc}")
    count = env_int("TRUSTED_PROXY_COUNT", 0, environ=environ)
    if count < 0:
        problems.append("TRUSTED_PROXY_COUNT must be 0 (no proxy) or more.")
    header = env_str("TRUSTED_CLIENT_IP_HEADER", environ=environ).strip()
    trusted = [
        name
        for name, on in (
            (f"TRUSTED_PROXY_COUNT={count}", count > 0),
            (f"TRUSTED_CLIENT_IP_HEADER={header}", bool(header)),
            ("TRUST_X_FORWARDED_PROTO=1", env_bool("TRUST_X_FORWARDED_PROTO", environ=environ)),
        )
        if on
    ]
    if trusted and not networks:
        problems.append(
            f"{', '.join(trusted)} without TRUSTED_PROXY_NETWORKS would believe your "
            "proxy's headers from anyone who reaches the service directly: set "
            "TRUSTED_PROXY_NETWORKS to the networks your proxies connect from "
            "(comma-separated CIDR, e.g. 10.0.0.0/24, or 127.0.0.1 for a proxy on this machine)."
        )
    if networks and not trusted:
        problems.append(
            "TRUSTED_PROXY_NETWORKS is set but nothing is read from those proxies: set "
            "TRUSTED_PROXY_COUNT (how many of them append to X-Forwarded-For) or "
            "TRUSTED_CLIENT_IP_HEADER, and TRUST_X_FORWARDED_PROTO=1 if they terminate TLS."
        )
    return problems
