"""Helpers for the tests of settings: run Python in a fresh interpreter with
config.settings and a given environment, and read what it printed."""

from __future__ import annotations

import json
import os
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


@pytest.fixture
def run_django(tmp_path: Path):
    """Run Python code in a fresh interpreter with config.settings and the given environment.

    VAR_DIR points into tmp_path, so a SQLite database or broker folder is never
    written into the checkout.
    """

    def run(code: str = "", **env: str) -> subprocess.CompletedProcess[str]:
        environ = {k: v for k, v in os.environ.items() if k not in MODE_VARIABLES}
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


def settings_of(result: subprocess.CompletedProcess[str]) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])
