"""Django settings. Everything machine-specific comes from the environment.

With nothing set, the service runs in production mode (DEBUG off), and so
needs a SECRET_KEY; on SQLite with an embedded broker (see CELERY_* below)
until DATABASE_URL and REDIS_URL say otherwise. A deployment sets SECRET_KEY,
ALLOWED_HOSTS, SITE_URL, DATABASE_URL and REDIS_URL. The quick start
(./scripts/serve) runs production mode too, with keys of its own kept in var/
(scripts/_local_env.sh); DEBUG=1 is for development on this machine only
(config/environment.py refuses it for a site others reach), as the tests run.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_list, env_str
from config.environment import (
    DEFAULT_SITE_URL,
    DEV_FIELD_ENCRYPTION_KEY,
    DEV_SECRET_KEY,
    environment_problems,
    is_local_site,
)
from lib.client_address import normalise_networks

# The environment's rules (a malformed variable, an unsafe production key,
# limits that contradict each other): checked before anything is read, so
# nothing starts on a bad environment and every problem is named at once.
if _problems := environment_problems(os.environ):
    raise ImproperlyConfigured("\n".join(_problems))

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))

# Off unless set: a deployment that forgets it never shows debug pages or runs
# on the public development keys. On only for a local site (checked above).
DEBUG = env_bool("DEBUG", default=False)
# SITE_URL and every allowed host are loopback (development, the quick start):
# the deployment checks for mail and the broker do not apply (config/checks.py),
# and cookies travel over plain HTTP to loopback (HTTPS_ONLY exempts it).
LOCAL_SITE = is_local_site(os.environ)

# Production needs a real one (config/environment.py).
SECRET_KEY = env_str("SECRET_KEY", DEV_SECRET_KEY)
# Fernet keys that encrypt secrets at rest (lib.crypto). The first encrypts;
# all decrypt, so a key is rotated by prepending a new one. Never derived from
# SECRET_KEY: rotating that after a leak must not make stored secrets unreadable.
# In production a missing key is a deployment check's error (config/checks.py,
# commitments.E003), reported by `manage.py check --deploy` with the rest, and
# the web and worker processes refuse to start on it (config.checks.
# refuse_unsafe_start); settings stay importable so the check can speak.
FIELD_ENCRYPTION_KEYS = env_list("FIELD_ENCRYPTION_KEYS")
if not FIELD_ENCRYPTION_KEYS and DEBUG:
    # Development only: a fixed, public key (config/environment.py).
    FIELD_ENCRYPTION_KEYS = [DEV_FIELD_ENCRYPTION_KEY]

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS")
# Loopback names are always served, also in production: the container's health
# check (Dockerfile HEALTHCHECK) and an operator on the machine reach the
# service as localhost, the only hosts where plain HTTP is accepted.
ALLOWED_HOSTS += [h for h in ("localhost", "127.0.0.1", "[::1]") if h not in ALLOWED_HOSTS]
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
SITE_URL = env_str("SITE_URL", DEFAULT_SITE_URL).rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    # Sign-in with an OpenID Connect provider (accounts.sso; docs/security.md, "Single sign-on").
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "ratelimits",
    "accounts",
    "audit",
    "commitments",
    "integrations",
    "notifications",
    "relay",
    "gather",
    "webhooks",
    "trackers",
    "config.apps.ServiceConfig",  # deployment checks (config/checks.py)
]

MIDDLEWARE = [
    # First: every log line of the request, the refusals included, has its id.
    "config.middleware.RequestIdMiddleware",
    # Before anything asks request.is_secure(): a forwarded scheme header from
    # a peer that is not one of your proxies is dropped.
    "config.middleware.UntrustedProxyHeadersMiddleware",
    # A probe of /healthz or /readyz over plain HTTP or with a pod-IP Host is
    # answered, never redirected or refused (docs/production.md).
    "config.middleware.HealthProbeMiddleware",
    "config.middleware.HttpsOnlyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.middleware.ApiErrorMiddleware",
    "django.middleware.common.CommonMiddleware",
    # The pages' middleware, from here to PageMiddlewareEnd: the token API
    # (/api/v1/) skips it all, and pays for no session, CSRF, messages or
    # allauth (docs/architecture.md, "The request's path").
    "config.middleware.PageMiddlewareStart",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "accounts.middleware.UserTimezoneMiddleware",
    # After messages: a redirect to sign in from a session that has ended says so.
    "accounts.middleware.SessionEndedMiddleware",
    # After authentication: staff without a second factor are told why the admin is closed.
    "accounts.middleware.AdminRequiresSecondFactorMiddleware",
    # The SSO buttons' redirect to the provider, allowed by the CSP of their pages.
    "accounts.middleware.SsoFormActionMiddleware",
    "config.middleware.PageMiddlewareEnd",
    # Innermost: on the way out it sees who the request was for (a session's
    # user, or a token's once DRF authenticated it) and every response a view
    # made, error pages included: Cache-Control: private, no-store for anyone
    # signed in.
    "config.middleware.PrivateResponsesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "commitments.context_processors.accord_waiting",
            ],
        },
    },
]

# --- Database -----------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL")
# The outbox relay's LISTEN needs a session of its own: behind a pooler in
# transaction mode, point this at PostgreSQL directly (or a session-mode
# pool); empty: DATABASE_URL (relay/listener.py).
DATABASE_LISTEN_URL = env_str("DATABASE_LISTEN_URL")
if DATABASE_URL:
    DATABASES = {
        "default": dj_database_url.parse(
            DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60), conn_health_checks=True
        )
    }
    # On behind a pooler in transaction mode (PgBouncer): a server-side cursor
    # cannot outlive the statement there (docs/production.md, "Scaling out").
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = env_bool(
        "DB_DISABLE_SERVER_SIDE_CURSORS", False
    )
    # Parameters are bound by the server, and a statement run a second time on
    # a connection is prepared there (psycopg's prepare_threshold): PostgreSQL
    # plans the API's writes once per connection, not at every call. Off
    # (DB_PREPARED_STATEMENTS=0: Django's client-side binding) behind a pooler
    # in transaction mode that does not keep prepared statements (PgBouncer
    # before 1.21, or without max_prepared_statements); docs/production.md.
    if env_bool("DB_PREPARED_STATEMENTS", True):
        DATABASES["default"]["OPTIONS"] = {
            **DATABASES["default"].get("OPTIONS", {}),
            "server_side_binding": True,
            "prepare_threshold": 2,
        }
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "db.sqlite3",  # type: ignore[typeddict-item]  # Django takes a Path
            # The web process and the worker write at once; none of them may
            # fail with "database is locked" (tests/config/test_sqlite_concurrency.py).
            "OPTIONS": {
                # Writers take the lock at BEGIN, so a transition's
                # read-check-write cannot interleave with another writer's
                # (SQLite has no SELECT ... FOR UPDATE), and a transaction
                # never upgrades a read lock to a write lock, which fails at
                # once instead of waiting.
                "transaction_mode": "IMMEDIATE",
                # Busy timeout (s): a writer waits this long for the lock.
                "timeout": 20,
                # Django runs each ;-separated statement on every new
                # connection. WAL: readers and the writer never block each other.
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Users and sign-in --------------------------------------------------------
AUTH_USER_MODEL = "accounts.User"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
SILENCED_SYSTEM_CHECKS = [
    # E-mail uniqueness is enforced case-insensitively by a functional unique
    # index (accounts.User.Meta.constraints), which this check does not recognise.
    "auth.W004",
    # SECURE_SSL_REDIRECT is off on purpose: HTTPS is enforced by
    # config.middleware.HttpsOnlyMiddleware, which redirects pages but answers
    # the API 403 (a client must not re-send its token after a redirect), serves
    # loopback on plain HTTP (the container's health check) and leaves the
    # probe routes to HealthProbeMiddleware (docs/production.md).
    "security.W008",
    # SECURE_HSTS_PRELOAD stays off: the preload list binds the whole domain
    # and its subdomains to HTTPS in every browser, for months after leaving
    # it; that is the domain owner's decision, not this service's.
    "security.W021",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_USER_MODEL_USERNAME_FIELD = None
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_PRESERVE_USERNAME_CASING = False
# Nobody receives commitments or nudges, or signs in, at an address they have
# not proved they own (accounts.selectors.users_with_verified_primary_email).
ACCOUNT_EMAIL_VERIFICATION = env_str("ACCOUNT_EMAIL_VERIFICATION", "mandatory")
# Proving an address is typing the code mailed to it in the browser session
# that asked (allauth's verification by code): at sign-up, at a sign-in with an
# unverified address, and for an address added on /accounts/email/. The code
# lives in that session only, so nothing mailed verifies anything when opened:
# not a mail gateway that follows links, not the owner of an address someone
# else typed, not anyone else's browser (docs/security.md, "Address
# verification"). With the console mail backend (the quick start) the mail is
# printed by the process serving the site.
ACCOUNT_EMAIL_VERIFICATION_BY_CODE_ENABLED = True
# "Send a new code" on the code page (allauth allows two per verification).
ACCOUNT_EMAIL_VERIFICATION_SUPPORTS_RESEND = True
# One address per person; a new one replaces the old only once it is verified
# (and accounts.views.EmailView never makes an unverified address primary).
ACCOUNT_CHANGE_EMAIL = True
# Tell the old address about an e-mail change, and the person about a password change.
ACCOUNT_EMAIL_NOTIFICATIONS = True
# Minting an API token asks for the password again when the sign-in (or the
# last re-authentication) is older than this many seconds (accounts.reauth).
ACCOUNT_REAUTHENTICATION_TIMEOUT = 300
ACCOUNT_SIGNUP_FORM_CLASS = "accounts.forms.SignupForm"
# The mail allauth sends names the service and links to SITE_URL (accounts.adapter).
ACCOUNT_ADAPTER = "accounts.adapter.AccountAdapter"
# The code typed for a sign-up (or a sign-in) signs the person in on their
# Accord (LOGIN_REDIRECT_URL); one typed for a new address, by someone already
# signed in, lands back on the e-mail page, which shows the change.
ACCOUNT_EMAIL_CONFIRMATION_AUTHENTICATED_REDIRECT_URL = "/accounts/email/"
ACCOUNT_LOGOUT_ON_GET = False
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "/"
ACCOUNT_LOGOUT_REDIRECT_URL = "/accounts/login/"
# --- Single sign-on (OpenID Connect) -------------------------------------------
# Providers are accounts.SsoProvider rows (admin, `manage.py add_sso_provider`),
# handed to allauth by this adapter; allauth's own SocialApp table is not read,
# so a client secret is stored only encrypted. The adapter also sends and checks
# the nonce and applies the address rules (docs/security.md, "Single sign-on").
SOCIALACCOUNT_ADAPTER = "accounts.sso.SocialAccountAdapter"
SOCIALACCOUNT_PROVIDERS = {"openid_connect": {"OAUTH_PKCE_ENABLED": True}}
# An existing account is reached by a provider's verified address only where
# the adapter allows it (a provider trusted for the address's domain), and is
# then linked to that provider.
SOCIALACCOUNT_EMAIL_AUTHENTICATION = True
SOCIALACCOUNT_EMAIL_AUTHENTICATION_AUTO_CONNECT = True
# The provider's tokens are not kept: only who the person is.
SOCIALACCOUNT_STORE_TOKENS = False
# Starting a sign-in is a POST from our sign-in page (allauth's default).
SOCIALACCOUNT_LOGIN_ON_GET = False
# allauth's sign-in, sign-up and password-reset limits (ACCOUNT_RATE_LIMITS,
# its defaults) count in the shared cache (CACHES, below), so they hold across
# gunicorn workers and hosts; the admin's login goes through allauth's
# (config/urls.py). They count per client address: behind proxies, say how many
# of the X-Forwarded-For entries your own proxies add (TRUSTED_PROXY_COUNT),
# or which header your proxy puts the client's address in
# (TRUSTED_CLIENT_IP_HEADER, e.g. X-Real-IP), and where your proxies are
# (TRUSTED_PROXY_NETWORKS, CIDR): those headers are believed only from a peer
# inside those networks, since anything that reaches the app port directly
# could send them (lib.client_address). The default trusts no proxy:
# X-Forwarded-For is ignored, since anyone can send it. A count or a header
# without networks is refused at start (config/environment.py).
# A second factor (allauth.mfa; docs/security.md, "Second factor"): an
# authenticator app (TOTP), security keys and passkeys (WebAuthn, relying
# party: SITE_URL's host) and recovery codes, asked for after the password; a
# passkey the person chose to make one signs in alone. The TOTP secret is
# stored encrypted with FIELD_ENCRYPTION_KEYS (accounts.mfa.MFAAdapter).
# Recovery codes are the service's own (accounts.recovery_codes: shown once,
# stored as keyed hashes), not allauth's (a seed its pages show again): left
# out of allauth's types, so allauth neither makes nor shows them; the
# service's pages take their addresses (accounts.urls.auth) and its forms
# check them at sign-in and re-authentication (MFA_FORMS).
MFA_ADAPTER = "accounts.mfa.MFAAdapter"
MFA_SUPPORTED_TYPES = ["totp", "webauthn"]
MFA_FORMS = {
    "authenticate": "accounts.forms.AuthenticateForm",
    "reauthenticate": "accounts.forms.ReauthenticateForm",
}
MFA_PASSKEY_LOGIN_ENABLED = True
# Turning a factor on or off and making new recovery codes are behind the
# service's re-authentication (accounts.reauth, on the URLs accounts.urls.auth
# mounts over allauth's), where a fresh sign-in counts; allauth's own check
# would ask again right after signing in, and parks a stale POST in the session.
MFA_REAUTHENTICATION_REQUIRED = False
# Staff open Django admin only once they have a second factor (the admin shows
# why it refuses otherwise: accounts.middleware.AdminRequiresSecondFactorMiddleware).
# On by default in production, off by default with DEBUG.
ADMIN_REQUIRES_MFA = env_bool("ADMIN_REQUIRES_MFA", not DEBUG)
ALLAUTH_TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
ALLAUTH_TRUSTED_CLIENT_IP_HEADER = env_str("TRUSTED_CLIENT_IP_HEADER") or None
TRUSTED_PROXY_NETWORKS = normalise_networks(env_list("TRUSTED_PROXY_NETWORKS"))

# --- Mail ---------------------------------------------------------------------
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
# For EMAIL_BACKEND=django.core.mail.backends.filebased.EmailBackend.
EMAIL_FILE_PATH = env_str("EMAIL_FILE_PATH", str(VAR_DIR / "mail"))
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Commitments <noreply@localhost>")

# --- Internationalisation -----------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Static files (served by the app itself through WhiteNoise) ---------------
STATIC_URL = "/static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
# In development (and tests) WhiteNoise serves from the finders, so it needs no
# collectstatic run; production serves the collected, hashed files.
WHITENOISE_AUTOREFRESH = DEBUG
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# --- HTTPS in production ------------------------------------------------------
# Plain HTTP is accepted only from loopback hosts; elsewhere pages redirect and
# the API refuses with 403 https_required (config.middleware.HttpsOnlyMiddleware).
HTTPS_ONLY = env_bool("HTTPS_ONLY", default=not DEBUG)
# Believed only from TRUSTED_PROXY_NETWORKS: from any other peer the header is
# dropped before Django reads it (config.middleware.UntrustedProxyHeadersMiddleware).
if env_bool("TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# A local site is served over plain HTTP to loopback: a Secure cookie would not
# come back from every browser there.
SESSION_COOKIE_SECURE = not DEBUG and not LOCAL_SITE
CSRF_COOKIE_SECURE = not DEBUG and not LOCAL_SITE
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = False
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# --- Content-Security-Policy (django-csp) ----------------------------------------
# On every response, pages and API alike. No inline script, style or event
# handler anywhere: scripts and styles come from our own static files
# (static/js/app.js; the Swagger UI of /api-reference loads its start-up
# script from a URL, config.urls). Images may be data: URLs (Swagger UI's
# icons are in its stylesheet as such).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    },
}

# --- API ----------------------------------------------------------------------
API_MAX_BODY_BYTES = 1024 * 1024
# The tracker hooks (/api/v1/hooks/) read their own bodies, streamed, up to
# this: GitHub caps a delivery at 25 MB (docs/trackers.md, trackers/wire.py).
TRACKER_MAX_BODY_BYTES = 25 * 1024 * 1024
# Per-token rate limit of POST /api/v1/inbox and /api/v1/sync (one bucket per
# token for both): off unless API_RATE_BURST is set; then a token may make
# API_RATE_BURST calls at once, refilled at API_RATE_PER_MINUTE a minute.
API_RATE_BURST = env_int("API_RATE_BURST", 0)
API_RATE_PER_MINUTE = env_int("API_RATE_PER_MINUTE", 0)
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "config.api_errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Commitment Tracking Service API",
    "DESCRIPTION": (
        "Issue trackers and chat tools create commitments with `POST /api/v1/inbox` and "
        "complete them by their external reference with `POST /api/v1/sync`, authenticated "
        "with a personal API token (`Authorization: Bearer svc_...`, minted on Settings, "
        'API Tokens). Every error answers `{"error", "message"}` with a stable `error` '
        "name, plus `details` for validation errors. Retry only on 5xx: a 4xx is the same "
        "for the same payload. Production accepts HTTPS only.\n\n"
        "A tracker connection's receiving URL, `POST /api/v1/hooks/{hook_id}`, takes GitHub's, "
        "GitLab's, Linear's or Jira's own webhook, authenticated by that tracker's signature "
        "rather than a token.\n\n"
        "Added since, leaving the routes above as they were (additive, so the version stays "
        "1.0.0): the read API, "
        "`GET /api/v1/commitments` (the token owner's commitments, filtered, newest change "
        "first, in cursor pages) and `GET /api/v1/commitments/{id}` (one, with its history of "
        "status changes), for tokens with the `read` scope, with `ETag` and "
        "`If-None-Match`.\n\n"
        "`POST /api/gather` (the capture surface) takes the session cookie of a signed-in "
        "user and the CSRF header, never a token, and turns pasted text into draft "
        "commitments with the user's own OpenAI or Anthropic key: each call, *Try it out* "
        "included, costs a real upstream call on that key."
    ),
    "VERSION": "1.0.0",
    "OAS_VERSION": "3.0.3",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # No deep links: Swagger UI would put a link inside each operation's toggle
    # button (nested interactive controls, an accessibility failure).
    "SWAGGER_UI_SETTINGS": {"deepLinking": False},
    "COMPONENT_SPLIT_REQUEST": True,
    # Try it out sends the session cookie; the start-up script
    # (templates/api_reference.js) adds the CSRF header to unsafe methods.
    "ENUM_NAME_OVERRIDES": {
        "CommitmentStatusEnum": "commitments.models.Status",
        "SyncTargetStatusEnum": ["Completed"],
        "ActorKindEnum": "integrations.serializers.ACTOR_KINDS",
    },
    # A nullable enum (the read API's history `previousStatus`) is the enum's
    # $ref marked `nullable`, not a oneOf with a `NullEnum` of `[null]`, which
    # generated clients read poorly.
    "ENUM_ADD_EXPLICIT_BLANK_NULL_CHOICE": False,
}

# --- Gather ---------------------------------------------------------------------
# POST /api/gather calls the user's own provider with the user's own key
# (gather.models.ModelKey, Settings, Model keys); the service never reads
# OPENAI_API_KEY or ANTHROPIC_API_KEY from its environment. A stored key
# without a model of its own uses its provider's default here: a current
# small, cheap model, overridable by the environment.
GATHER_DEFAULT_MODELS = {
    "openai": env_str("GATHER_OPENAI_MODEL", "gpt-6-luna"),
    "anthropic": env_str("GATHER_ANTHROPIC_MODEL", "claude-haiku-5-5"),
}
# Seconds per provider call (no SDK retries); the whole gather, chunks
# included, gives up after twice this.
GATHER_PROVIDER_TIMEOUT = env_int("GATHER_PROVIDER_TIMEOUT", 60)
# Per-user token bucket: GATHER_RATE_BURST calls at once, refilled at
# GATHER_RATE_PER_HOUR calls an hour.
GATHER_RATE_BURST = env_int("GATHER_RATE_BURST", 5)
GATHER_RATE_PER_HOUR = env_int("GATHER_RATE_PER_HOUR", 60)
# OpenAI-compatible gateways (and tests' fake provider) through OPENAI_BASE_URL;
# ANTHROPIC_BASE_URL likewise. Unset: the providers' own endpoints.
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL") or None
ANTHROPIC_BASE_URL = env_str("ANTHROPIC_BASE_URL") or None
# Longer texts are split on paragraph boundaries into chunks of at most this
# many characters (a tuning constant, not configuration).
GATHER_MAX_CHUNK_CHARS = 12_000

# --- Background work ----------------------------------------------------------
# Celery carries only row ids. The rows (commitments.OutboxEvent,
# notifications.NudgeDelivery) are the truth, and a periodic sweep re-enqueues what
# the broker lost; so a publish may fail, and it is bounded: a request never
# hangs on a dead or paused broker (it publishes once, without retries, and
# loses at most BROKER_TIMEOUT seconds).
REDIS_URL = env_str("REDIS_URL")
BROKER_TIMEOUT = env_int("BROKER_TIMEOUT", 2)  # seconds per broker command or connect
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    # Kombu's Redis transport, fixed so an ack Redis did not answer cannot
    # stall a worker for good (config/broker.py).
    CELERY_BROKER_TRANSPORT = "config.broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
        # Without socket timeouts a publish to a paused Redis waits forever.
        "socket_connect_timeout": BROKER_TIMEOUT,
        "socket_timeout": BROKER_TIMEOUT,
        "socket_keepalive": True,
        # A message taken by a worker that then died comes back after this.
        # Tasks are short (time limits below) and nothing waits in the queue
        # on a countdown (retries are scheduled in the database), so no
        # healthy message stays unacknowledged this long.
        "visibility_timeout": 300,
    }
else:
    # Embedded default: a broker that needs no server. Web and worker share
    # these folders; the outbox rows in the database stay the source of truth.
    _broker_dir = VAR_DIR / "broker"
    for _sub in ("queue", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
        # How often an idle worker lists the folder (kombu's default is 1 s,
        # which also caps a worker at a few tasks a second).
        "polling_interval": 0.1,
    }
CELERY_BROKER_CONNECTION_TIMEOUT = BROKER_TIMEOUT

# --- The shared cache -----------------------------------------------------------
# Shared by every process, so the limits kept in it (allauth's) hold across
# gunicorn workers: Redis when configured (one that does not answer is a miss,
# not an error: lib.cache), else the database. The database cache's table is
# created by `migrate` (ratelimits.CacheEntry).
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "lib.cache.TolerantRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "cache",
            "OPTIONS": {
                "socket_connect_timeout": BROKER_TIMEOUT,
                "socket_timeout": BROKER_TIMEOUT,
            },
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "django_cache",
            "KEY_PREFIX": "cache",
            # Past this many entries Django culls a third of them, limits'
            # counts included; the default (300) is far too few for that.
            "OPTIONS": {"MAX_ENTRIES": 50_000},
        }
    }
# Publishes from workers and beat retry a little (a pooled connection may be
# stale after a Redis restart); the sweep is the real retry. Requests publish
# without retries (relay.outbox). Workers and beat wait for the broker
# at start and reconnect as long as it takes.
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# With late acks a task running when the broker connection drops is delivered
# again; stop it instead of letting two copies run at once.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
# Every task is bounded; the delivery lease below is longer than the hard limit,
# so a lease expires only when its worker is really gone. (The threads pool
# does not enforce these limits: there each send is bounded by its own
# timeouts, WEBHOOK_TIMEOUT, NOTIFY_HTTP_TIMEOUT and EMAIL_TIMEOUT, all far
# shorter than the lease, and each send of a batch is claimed just before it
# goes, with a lease of its own.)
CELERY_TASK_SOFT_TIME_LIMIT = 45
CELERY_TASK_TIME_LIMIT = 60
# Threads: the work is waiting on PostgreSQL, the mail server and receivers,
# and one process with threads holds a fraction of the memory of a prefork
# child per slot (docs/production.md, "Workers"). `--pool prefork` still works.
CELERY_WORKER_POOL = "threads"
CELERY_WORKER_CONCURRENCY = 8
# Celery's Django fixup closes every database connection before and after
# each task unless this is set, and then every 2 x this many tasks: each task
# connected anew (about 25 new PostgreSQL sessions a second while the worker
# drained a backlog) and prepared its statements again. Set out of reach:
# a task leaves its thread's connection as a request does, closed only when
# unusable or older than CONN_MAX_AGE (config/celery.py).
CELERY_DB_REUSE_MAX = 10**9
# `run_worker` starts the outbox's and nudges' worker at this much more CPU
# niceness than the webhooks' worker (and the web, on a shared host): its work
# comes in bulk and keeps a core busy, while a webhook line sends one request
# at a time and, at the same priority, waits for the CPU after each answer
# (docs/benchmarks.md, "The webhook line's turn on the CPU").
WORKER_OUTBOX_NICE = 5
# And under Linux's idle scheduling policy (SCHED_IDLE): preempted the moment
# the line wakes, where at a higher niceness the line still waited for the
# running slice to end after each answer (docs/benchmarks.md, "The line's
# wake-ups"). It then runs only on what the web and the webhooks leave of
# the CPU: on a host whose web saturates its cores, nudges wait for a lull.
WORKER_OUTBOX_IDLE = env_bool("WORKER_OUTBOX_IDLE", True)
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"

# --- Nudges and the outbox (relay, notifications) ----------------------------
# Tuning, not configuration: fixed here, not read from the environment (tests
# override them through Django's settings).
OUTBOX_SWEEP_INTERVAL = 30  # s between sweeps (beat)
# The sweep leaves a row alone this long after it was written or last queued,
# so it does not queue again what the relay just queued.
OUTBOX_SWEEP_GRACE = 10
# The relay (relay/listener.py, in beat) queues each outbox event the moment
# its transaction commits, woken by PostgreSQL's NOTIFY; without a wake-up
# (SQLite, or a notification lost with its connection) it looks this often.
OUTBOX_RELAY_WAIT = 1.0  # s
OUTBOX_REQUEUE_AFTER = 120  # s before queueing a row again
# A claimed send's lease; longer than CELERY_TASK_TIME_LIMIT, so it runs out
# only when its worker is gone.
DELIVERY_LEASE_SECONDS = 120
DELIVERY_MAX_ATTEMPTS = 10  # per channel, then fall back to e-mail or fail
NOTIFY_HTTP_TIMEOUT = 10  # s, Slack and Teams webhooks
NOTIFY_TEST_INTERVAL = 10  # s between one person's "send a test"
# --- Outbound webhooks (webhooks) ---
# Seconds an attempt may take, connect to last byte (docs/webhooks.md).
WEBHOOK_TIMEOUT = 10
# Retries stop this long after a delivery's first attempt (one last attempt
# then), and the previous secret of a rotation signs this long.
WEBHOOK_RETRY_WINDOW = 24 * 3600
# Seconds from a failed attempt to the next, after attempts 1, 2, ... (Svix's
# schedule, cut at 24 hours; webhooks/schedule.py adds the jitter).
WEBHOOK_RETRY_SCHEDULE = (5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600)
WEBHOOK_ROTATION_OVERLAP = 24 * 3600
# One person's share of the webhook workers: at most this many endpoints, at
# most this many sends in flight at once (across all their endpoints; keep
# the webhook worker's concurrency above it), and one "send a test" every
# WEBHOOK_TEST_INTERVAL seconds (docs/webhooks.md, "Limits").
WEBHOOK_MAX_ENDPOINTS = env_int("WEBHOOK_MAX_ENDPOINTS", 20)
WEBHOOK_USER_IN_FLIGHT = env_int("WEBHOOK_USER_IN_FLIGHT", 2)
WEBHOOK_TEST_INTERVAL = 10
# Webhook sends have a Celery queue of their own, consumed by workers of
# their own (run_worker starts one; compose.yaml runs `webhook-worker`), so a
# slow or dead receiver never holds up a nudge.
WEBHOOK_QUEUE = "webhooks"
# Tasks are named here by string (config is the top layer; the apps import
# them); tests/config/test_celery_tasks.py checks every name is a task.
# Nudges have a queue of their own too, consumed by the default workers with
# the outbox's (each worker takes from its queues in turn), so a backlog of
# dispatches never stands in front of a nudge, nor of the sweep or the
# reminders, which share it.
NUDGE_QUEUE = "nudges"
# The queues a worker started without --queues consumes (not the webhooks').
CELERY_TASK_QUEUES: dict[str, dict[str, str]] = {"celery": {}, NUDGE_QUEUE: {}}
CELERY_TASK_ROUTES = {
    "webhooks.tasks.deliver_webhook": {"queue": WEBHOOK_QUEUE},
    "webhooks.tasks.deliver_webhooks": {"queue": WEBHOOK_QUEUE},
    "notifications.tasks.deliver_nudge": {"queue": NUDGE_QUEUE},
    "notifications.tasks.deliver_nudges": {"queue": NUDGE_QUEUE},
    "notifications.tasks.send_test_nudge": {"queue": NUDGE_QUEUE},
    # The sweep and the reminders queue sends; behind a backlog of
    # dispatches they would expire (their messages live one interval).
    "relay.tasks.sweep": {"queue": NUDGE_QUEUE},
    "notifications.tasks.remind": {"queue": NUDGE_QUEUE},
}
# Every worker writes, every WORKER_HEARTBEAT_INTERVAL s, that it consumes its
# queues (config/health.py, in Redis); /readyz counts a queue's consumer as
# live while its last heartbeat is at most WORKER_HEARTBEAT_STALE s old.
WORKER_HEARTBEAT_INTERVAL = 5
WORKER_HEARTBEAT_STALE = 15
# At most NUDGE_CAP nudges to one assignee about one assigner's requests in
# any NUDGE_CAP_WINDOW seconds; what is over it waits for one digest nudge.
NUDGE_CAP = env_int("NUDGE_CAP", 30)
NUDGE_CAP_WINDOW = 3600
# Moves for one person within this many seconds of a nudge that went come
# together in one message at the window's end (the first of a quiet spell goes
# at once); 0 sends each at once (docs/delivery.md, "Close together").
NUDGE_COALESCE_WINDOW = env_int("NUDGE_COALESCE_WINDOW", 180)
# The hour (0-23, in each person's time zone) their daily digest goes: the
# news they chose to get "in the daily digest" (Settings, Notifications).
DIGEST_HOUR = env_int("DIGEST_HOUR", 8)
# Asks to addresses without an account one person may make (New commitment
# page) in 24 hours, repeated asks to one address included: the form must not
# mail strangers in bulk (docs/security.md, "Invitations").
INVITATIONS_PER_DAY = env_int("INVITATIONS_PER_DAY", 20)
# How long the answer links of a handshake request (Accept, Decline, Propose
# another date; commitments.answer_links) stay good, in seconds: 14 days.
ANSWER_LINK_MAX_AGE = 14 * 24 * 3600
# Reminders (notifications.reminders, docs/reminders.md), made by beat every
# REMINDER_INTERVAL s: the assignee REMINDER_LEAD s before an Active
# commitment's deadline and when it passes, the assigner when a request has
# waited HANDSHAKE_REMINDER_AFTER s for its handshake. At most one reminder
# message per person per REMINDER_CAP_WINDOW s (a digest then); a reminder
# whose moment is more than REMINDER_LOOKBACK s past is not made at all.
REMINDER_INTERVAL = 300
REMINDER_LEAD = 24 * 3600
HANDSHAKE_REMINDER_AFTER = 2 * 24 * 3600
REMINDER_CAP_WINDOW = 3600
REMINDER_LOOKBACK = 7 * 24 * 3600
# Outbound HTTP (lib.outbound) to http:// URLs on loopback (127.0.0.0/8, ::1):
# for development and tests only. Private, link-local, CGNAT, multicast and
# metadata addresses stay refused even then.
OUTBOUND_ALLOW_LOOPBACK = env_bool("OUTBOUND_ALLOW_LOOPBACK", DEBUG)
# Seconds a form that takes a URL (webhooks, Slack, Teams) waits for its host
# name to resolve; a send resolves within its own deadline.
OUTBOUND_RESOLVE_TIMEOUT = 5
CELERY_BEAT_SCHEDULE = {
    "outbox-sweep": {
        "task": "relay.tasks.sweep",
        "schedule": float(OUTBOX_SWEEP_INTERVAL),
        # A sweep queued while no worker ran is stale once the next is due.
        "options": {"expires": float(OUTBOX_SWEEP_INTERVAL)},
    },
    "reminders": {
        "task": "notifications.tasks.remind",
        "schedule": float(REMINDER_INTERVAL),
        "options": {"expires": float(REMINDER_INTERVAL)},
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# --- Logging ------------------------------------------------------------------
# Nothing may log a secret: a webhook URL (its path is the secret), a bearer
# token, a session id, a webhook secret or a model key. httpx logs every
# request's full URL at INFO, and Django's SQL log (DEBUG=1 and LOG_LEVEL=DEBUG)
# prints parameters, session keys among them: those loggers stay above what
# they would leak at. Every handler also passes lib.redact's filter, which
# blanks anything shaped like a secret that reaches it anyway; the Celery
# worker and beat attach it to their own handlers (config/celery.py).
# LOG_JSON (default on in production): one JSON object a line with the
# request's id (lib.logs), in the web processes, the workers and beat
# (config/celery.py) and gunicorn's own logs (config/gunicorn.py).
LOG_JSON = env_bool("LOG_JSON", not DEBUG)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "redact_secrets": {"()": "lib.redact.RedactSecretsFilter"},
        "request_id": {"()": "lib.logs.RequestIdFilter"},
    },
    "formatters": {
        "json": {"()": "lib.logs.JsonFormatter"},
        "plain": {"format": "%(message)s"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["redact_secrets", "request_id"],
            "formatter": "json" if LOG_JSON else "plain",
        },
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        # The provider SDKs log whole requests at DEBUG (the pasted text of
        # POST /api/gather among them): never, whatever LOG_LEVEL says.
        "openai": {"level": "WARNING"},
        "anthropic": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "httpcore2": {"level": "WARNING"},
        "django.db.backends": {"level": "INFO"},
    },
}
