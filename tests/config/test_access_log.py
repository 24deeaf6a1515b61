"""The access log (config/access_log.py, config/gunicorn.py) writes the line
gunicorn's own logger writes, to the byte, with less work, and through the
same secret-redacting filter."""

from __future__ import annotations

import datetime as dt
import importlib
import io
import json
import logging
import socket

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger
from gunicorn.http import wsgi
from gunicorn.http.parser import RequestParser

from config.access_log import AccessLogger
from lib.logs import JsonFormatter
from lib.redact import RedactSecretsFilter

REQUEST_ID = "0123456789abcdef0123456789abcdef"


def service_config() -> Config:
    cfg = Config()
    for key, value in vars(importlib.import_module("config.gunicorn")).items():
        if key in cfg.settings:
            cfg.set(key, value)
    return cfg


def writer(logger_class: type[Logger], cfg: Config) -> tuple[Logger, io.StringIO]:
    """The logger as gunicorn's setup leaves it (its handler as config.gunicorn
    configures it: the redacting filter, the JSON formatter), writing to a buffer;
    made without setup(), which would configure this process's logging."""
    logger = object.__new__(logger_class)
    logger.cfg = cfg
    logger._access_log_enabled = True
    logger.error_log = logging.getLogger(f"test.error.{logger_class.__name__}")
    logger.access_log = logging.getLogger(f"test.access.{logger_class.__name__}")
    logger.access_log.propagate = False
    logger.access_log.setLevel(logging.INFO)
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RedactSecretsFilter())
    handler.setFormatter(JsonFormatter())
    logger.access_log.handlers = [handler]
    return logger, out


def one_request(cfg: Config, raw: bytes, status: str, headers: list[tuple[str, str]]):
    ours, theirs = socket.socketpair()
    try:
        ours.sendall(raw)
        client = ("203.0.113.9", 50000)
        req = next(iter(RequestParser(cfg, theirs, client)))
        resp, environ = wsgi.create(req, theirs, client, ("127.0.0.1", 3000), cfg)
    finally:
        ours.close()
        theirs.close()
    resp.start_response(status, headers)
    resp.sent = 57
    return resp, req, environ


def written(logger_class: type[Logger], cfg: Config, request) -> dict:
    """The one line written, read back (its time and logger's name left out)."""
    logger, out = writer(logger_class, cfg)
    logger.access(*request, dt.timedelta(milliseconds=3, microseconds=250))
    (line,) = out.getvalue().splitlines()
    entry = json.loads(line)
    del entry["time"], entry["logger"]
    return entry


API_CALL = (
    b"POST /api/v1/inbox?debug=1 HTTP/1.1\r\nHost: api.example.com\r\n"
    b"Authorization: Bearer svc_0123456789abcdefghijABCDEFGHIJ123456\r\n"
    b'User-Agent: tracker/1.0 "quoted"\r\nContent-Length: 2\r\n\r\n{}'
)
HOOK_CALL = (
    b"POST /api/v1/hooks/7d1f0c2ab34e HTTP/1.1\r\nHost: api.example.com\r\n"
    b"Content-Length: 2\r\n\r\n{}"
)
# As the line quotes them: the user agent's own quotes escaped, as gunicorn does.
USER_AGENT = {API_CALL: '"tracker/1.0 \\"quoted\\""', HOOK_CALL: '"-"'}


@pytest.mark.parametrize("raw", [API_CALL, HOOK_CALL], ids=["inbox", "a tracker hook"])
def test_the_line_is_gunicorns_own(raw):
    cfg = service_config()
    assert cfg.logger_class is AccessLogger
    request = one_request(
        cfg,
        raw,
        "201 Created",
        [("Content-Type", "application/json"), ("X-Request-ID", REQUEST_ID)],
    )

    ours = written(AccessLogger, cfg, request)

    assert ours == written(Logger, cfg, request)
    assert ours["message"].endswith(f" 201 57 3ms {USER_AGENT[raw]} {REQUEST_ID}")
    assert "debug=1" not in ours["message"]  # the path without its query string


def test_a_secret_in_the_path_is_still_blanked():
    cfg = service_config()
    request = one_request(cfg, HOOK_CALL, "202 Accepted", [("X-Request-ID", REQUEST_ID)])

    message = written(AccessLogger, cfg, request)["message"]

    assert '"POST /api/v1/hooks/[redacted] HTTP/1.1"' in message
    assert "7d1f0c2ab34e" not in message


def test_a_header_the_response_lacks_is_a_dash():
    cfg = service_config()
    request = one_request(cfg, API_CALL, "200 OK", [("Content-Type", "application/json")])

    assert written(AccessLogger, cfg, request)["message"].endswith(f"{USER_AGENT[API_CALL]} -")
