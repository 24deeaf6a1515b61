"""gunicorn's settings (`gunicorn -c python:config.gunicorn`, scripts/start).

Port PORT (default 3000) on every interface. The access log leaves out query
strings and referrers, where a link's secret could travel, names the request
id (the response's X-Request-ID, config.middleware.RequestIdMiddleware), and
passes through the same secret-redacting filter as every other log
(lib.redact; a password-reset key in a path is blanked), written by
config.access_log.AccessLogger (gunicorn's, with less work per line). With LOG_JSON (on in
production unless set to 0, as in the settings) gunicorn's lines are JSON
objects like the service's (lib.logs).

Each worker loads the application (config/wsgi.py resolves the URLconf) before
it accepts a connection, so no request pays for the imports.
"""

import os

from config.env import env_bool

bind = f"0.0.0.0:{os.environ.get('PORT') or '3000'}"
accesslog = "-"
access_log_format = (
    '%(h)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms "%(a)s" %({x-request-id}o)s'
)
# gunicorn's logger, each access line built with less work (the same line).
logger_class = "config.access_log.AccessLogger"

# The application is loaded once, in the master, before the workers are
# forked (config/wsgi.py resolves the URLconf there too): every worker, a
# restarted one included, starts warm and shares the loaded code's memory.
# Nothing connects at import (the database and Redis connect on first use, in
# each worker). A code change needs a restart, not a HUP.
preload_app = True

# gunicorn 25.1+ opens a control socket (for `gunicornc`) in $XDG_RUNTIME_DIR
# or $HOME/.gunicorn by default; in the image the app user cannot write its
# home (/app), so every start logged a permission error. The service does not
# use gunicornc: no socket.
control_socket_disable = True

_json = env_bool("LOG_JSON", not env_bool("DEBUG", False))
_formatter = "json" if _json else "generic"

# Merged by gunicorn into its own defaults (gunicorn.glogging.CONFIG_DEFAULTS),
# whose top-level keys these replace.
logconfig_dict = {
    "filters": {"redact_secrets": {"()": "lib.redact.RedactSecretsFilter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": _formatter,
            "filters": ["redact_secrets"],
            "stream": "ext://sys.stdout",
        },
        "error_console": {
            "class": "logging.StreamHandler",
            "formatter": _formatter,
            "filters": ["redact_secrets"],
            "stream": "ext://sys.stderr",
        },
    },
    "loggers": {
        "gunicorn.error": {"level": "INFO", "handlers": ["error_console"], "propagate": False},
        "gunicorn.access": {"level": "INFO", "handlers": ["console"], "propagate": False},
    },
}
if _json:
    logconfig_dict["formatters"] = {
        "generic": {"format": "%(asctime)s [%(process)d] [%(levelname)s] %(message)s"},
        "json": {"()": "lib.logs.JsonFormatter"},
    }
