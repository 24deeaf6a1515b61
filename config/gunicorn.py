"""gunicorn's settings (`gunicorn -c python:config.gunicorn`, scripts/start).

The access log leaves out query strings and referrers, where a link's secret
could travel, and passes through the same secret-redacting filter as every
other log (lib.redact; a password-reset key in a path is blanked).
"""

bind = "0.0.0.0:3000"
accesslog = "-"
access_log_format = '%(h)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms "%(a)s"'

# Merged by gunicorn into its own defaults (gunicorn.glogging.CONFIG_DEFAULTS),
# whose top-level keys these replace.
logconfig_dict = {
    "filters": {"redact_secrets": {"()": "lib.redact.RedactSecretsFilter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "generic",
            "filters": ["redact_secrets"],
            "stream": "ext://sys.stdout",
        },
        "error_console": {
            "class": "logging.StreamHandler",
            "formatter": "generic",
            "filters": ["redact_secrets"],
            "stream": "ext://sys.stderr",
        },
    },
    "loggers": {
        "gunicorn.error": {"level": "INFO", "handlers": ["error_console"], "propagate": False},
        "gunicorn.access": {"level": "INFO", "handlers": ["console"], "propagate": False},
    },
}
