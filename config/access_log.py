"""gunicorn's access log, each line written with less work (config/gunicorn.py).

gunicorn's own Logger makes, for every line, an atom of each request header,
response header and WSGI environ variable (about seventy), escapes every one
of them, and the line is then formatted twice, once by the secret-redacting
filter and once by the formatter. This one makes the atoms from the environ
variables gunicorn's atoms read, escapes only the atoms the format names, and
hands the handlers the line already formatted, which the filter (lib.redact)
then most often passes without a scan. A format naming an environ variable
(`{...}e`) is written gunicorn's own way. The line is the same, to the byte
(tests/config/test_access_log.py).
"""

from __future__ import annotations

import functools
import re
import traceback

from gunicorn.glogging import Logger

# What gunicorn's Logger.atoms and Logger._get_user read from the environ.
ATOM_ENVIRON = (
    "REMOTE_ADDR",
    "REQUEST_METHOD",
    "RAW_URI",
    "SERVER_PROTOCOL",
    "PATH_INFO",
    "QUERY_STRING",
    "HTTP_REFERER",
    "HTTP_USER_AGENT",
    "HTTP_AUTHORIZATION",
)


@functools.cache
def named_atoms(line_format: str) -> tuple[str, ...]:
    """The atoms a format names: `%(h)s` names `h`, `%({x-request-id}o)s` a header."""
    return tuple(dict.fromkeys(re.findall(r"%\(([^)]*)\)", line_format)))


def escaped(value: object) -> object:
    """As gunicorn's SafeAtoms escapes an atom."""
    return value.replace('"', '\\"') if isinstance(value, str) else value


class AccessLogger(Logger):
    def access(self, resp, req, environ, request_time) -> None:
        if not self.access_log_enabled:
            return
        line_format = self.cfg.access_log_format
        if "}e" in line_format:
            super().access(resp, req, environ, request_time)
            return
        read = {key: environ[key] for key in ATOM_ENVIRON if key in environ}
        try:
            atoms = self.atoms(resp, req, read, request_time)
            # As SafeAtoms looks an atom up: a header's name in lower case, "-"
            # for one that is not there.
            values = {
                key: escaped(atoms.get(key.lower() if key.startswith("{") else key, "-"))
                for key in named_atoms(line_format)
            }
            self.access_log.info(line_format % values)
        except Exception:
            self.error(traceback.format_exc())
