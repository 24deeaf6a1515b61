"""Deployment checks: settings that are fine on a laptop and unsafe in
production, reported by `manage.py check --deploy` as errors that name what
to set.

They only speak when DEBUG is off, and on a local site (SITE_URL and
ALLOWED_HOSTS loopback, config.environment.is_local_site: the quick start)
only the encryption keys are asked for. The container's start (`scripts/start`)
runs `check --deploy --fail-level ERROR` before gunicorn or Celery, and the
processes themselves refuse to start on the same errors (`refuse_unsafe_start`,
called by config/wsgi.py and by the Celery worker and beat at start), so a
missing production secret fails at start, loudly, however the process is
started, with the message `check --deploy` gives.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from lib.crypto import MAKE_A_KEY
from lib.outbound import is_loopback_host

# Mail backends that never deliver: they print, keep in memory, or drop.
NON_DELIVERING_MAIL = {
    "django.core.mail.backends.console.EmailBackend": "prints mail to the log",
    "django.core.mail.backends.locmem.EmailBackend": "keeps mail in memory",
    "django.core.mail.backends.dummy.EmailBackend": "drops mail",
}
SMTP_BACKEND = "django.core.mail.backends.smtp.EmailBackend"


def _mail_backend() -> list[checks.CheckMessage]:
    what = NON_DELIVERING_MAIL.get(settings.EMAIL_BACKEND)
    if what is None:
        return []
    return [
        checks.Error(
            f"DEBUG=0 with EMAIL_BACKEND={settings.EMAIL_BACKEND}, which {what}: nudges, "
            "sign-up and password-reset mail would never arrive.",
            hint=f"Set EMAIL_BACKEND={SMTP_BACKEND} and EMAIL_HOST (with EMAIL_PORT, "
            "EMAIL_HOST_USER, EMAIL_HOST_PASSWORD, EMAIL_USE_TLS as your relay needs).",
            id="commitments.E001",
        )
    ]


def _broker() -> list[checks.CheckMessage]:
    if settings.REDIS_URL:
        return []
    return [
        checks.Error(
            "DEBUG=0 without REDIS_URL: the embedded broker is a folder on this machine, "
            "so web and workers on other machines (or containers) would never see each "
            "other's jobs.",
            hint="Set REDIS_URL, e.g. redis://redis:6379/0.",
            id="commitments.E002",
        )
    ]


def _encryption_keys() -> list[checks.CheckMessage]:
    if settings.FIELD_ENCRYPTION_KEYS:
        return []
    return [
        checks.Error(
            "DEBUG=0 without FIELD_ENCRYPTION_KEYS: webhook URLs and other stored secrets "
            "cannot be encrypted or read.",
            hint=f"Set FIELD_ENCRYPTION_KEYS to a Fernet key; make one with: {MAKE_A_KEY}",
            id="commitments.E003",
        )
    ]


def _outbound_loopback() -> list[checks.CheckMessage]:
    if not settings.OUTBOUND_ALLOW_LOOPBACK:
        return []
    return [
        checks.Error(
            "DEBUG=0 with OUTBOUND_ALLOW_LOOPBACK on: anyone who can save a webhook URL "
            "could make this service send requests to its own machine.",
            hint="Set OUTBOUND_ALLOW_LOOPBACK=0 (or leave it unset).",
            id="commitments.E004",
        )
    ]


def _site_url() -> list[checks.CheckMessage]:
    host = urlsplit(settings.SITE_URL).netloc.rsplit("@", 1)[-1]
    if host and not is_loopback_host(host):
        return []
    return [
        checks.Error(
            f"DEBUG=0 with SITE_URL={settings.SITE_URL or '(empty)'} on a site others reach "
            "(ALLOWED_HOSTS names another host): every link in the service's mail (nudges, "
            "their answer links, sign-up, password reset) would point at this machine.",
            hint="Set SITE_URL to the address people open, e.g. https://commitments.example.com.",
            id="commitments.E005",
        )
    ]


def production_problems() -> list[checks.CheckMessage]:
    if settings.DEBUG:
        return []
    if settings.LOCAL_SITE:
        # Reached on this machine only (SITE_URL and ALLOWED_HOSTS loopback:
        # the quick start): mail printed to the worker's log, the folder broker
        # and webhooks to a receiver on this machine are what it is for.
        found = _encryption_keys()
    else:
        found = [
            *_mail_backend(),
            *_broker(),
            *_encryption_keys(),
            *_outbound_loopback(),
            *_site_url(),
        ]
    # A settings module silences one of these as it silences any of Django's
    # checks (benchmarks/settings.py: outbound requests to its loopback
    # receivers), so `check --deploy` and a process's start say the same.
    return [problem for problem in found if problem.id not in settings.SILENCED_SYSTEM_CHECKS]


@checks.register(checks.Tags.security, deploy=True)
def check_production_settings(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    return production_problems()


def refuse_unsafe_start() -> None:
    """Raise ImproperlyConfigured, naming every problem, when production
    settings are unsafe. Called where a long-running process starts."""
    problems = production_problems()
    if problems:
        lines = [f"{p.id}: {p.msg} {p.hint}" for p in problems]
        raise ImproperlyConfigured(
            "Refusing to start in production (DEBUG=0):\n" + "\n".join(lines)
        )
