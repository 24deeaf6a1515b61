"""Helpers for the tests of settings: what config/settings.py decides for an
environment, in-process (`settings_for`), or Python run in a fresh interpreter
with config.settings and a given environment (`run_django`, for the few tests
that prove a process refuses to start)."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

# Variables that decide the mode; each subprocess starts with none of them.
MODE_VARIABLES = (
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "SITE_URL",
    "HTTPS_ONLY",
    "DATABASE_URL",
    "REDIS_URL",
    "SECURE_HSTS_SECONDS",
    "TRUST_X_FORWARDED_PROTO",
    "FIELD_ENCRYPTION_KEYS",
    "STATIC_ROOT",
    "VAR_DIR",
)
REAL_KEY = "k" * 20 + "-a-real-random-looking-key-" + "9" * 10
# A Fernet key, as `Fernet.generate_key()` makes them; production needs one.
REAL_FERNET_KEY = "mQ9kB0m0yK2cO0d4VbHkR3t1xqC8s5Yw7Zp2Lr6Ju4E="

# DEBUG is off unless set (config/settings.py); these helpers start from
# development mode, as the tests themselves run (tests/settings.py): a test of
# production mode says DEBUG="0", a test of the real default DEBUG=None.
DEVELOPMENT = {"DEBUG": "1"}

SETTINGS_FILE = Path(__file__).resolve().parents[2] / "config" / "settings.py"


@pytest.fixture
def run_django(tmp_path: Path):
    """Run Python code in a fresh interpreter with config.settings and the given environment.

    VAR_DIR points into tmp_path, so a SQLite database or broker folder is never
    written into the checkout.
    """

    def run(code: str = "", **env: str) -> subprocess.CompletedProcess[str]:
        environ = {k: v for k, v in os.environ.items() if k not in MODE_VARIABLES}
        environ.update(DEVELOPMENT)
        environ.update(
            {
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "VAR_DIR": str(tmp_path / "var"),
                "PYTHONDONTWRITEBYTECODE": "1",
                "FIELD_ENCRYPTION_KEYS": REAL_FERNET_KEY,
            }
        )
        environ.update(env)
        script = "import django\ndjango.setup()\n" + code
        return subprocess.run(
            [sys.executable, "-c", script],
            cwd=settings.BASE_DIR,
            env=environ,
            capture_output=True,
            text=True,
            timeout=60,
        )

    return run


def settings_for(tmp_path: Path, **env: str | None) -> dict:
    """What config/settings.py decides with exactly this environment (no mode
    variable but those given and DEBUG=1, None unsets one; VAR_DIR in tmp_path; a real
    FIELD_ENCRYPTION_KEYS unless given), in this process: the
    module's code runs again in a namespace of its own and its globals are
    returned. The settings Django uses stay as they are. Raises what the
    module raises."""
    environ = {k: v for k, v in os.environ.items() if k not in MODE_VARIABLES}
    environ.update(DEVELOPMENT)
    environ.update({"VAR_DIR": str(tmp_path / "var"), "FIELD_ENCRYPTION_KEYS": REAL_FERNET_KEY})
    environ.update({k: v for k, v in env.items() if v is not None})
    environ = {k: v for k, v in environ.items() if env.get(k, "") is not None}
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environ)
    try:
        return runpy.run_path(str(SETTINGS_FILE), run_name="config.settings_probe")
    finally:
        os.environ.clear()
        os.environ.update(saved)
