"""The provider SDKs are imported only where an extraction runs: loading the
URLconf (what a web worker does on its first request) does not pay for
`openai` and `anthropic` (seconds of imports)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

PROBE = """
import json, sys
import django
django.setup()
import config.urls
from django.urls import resolve
resolve("/api/gather")
loaded = sorted(m for m in ("openai", "anthropic") if m in sys.modules)
from gather.providers import provider_for
provider_for("openai"), provider_for("anthropic")  # looked up as an extraction does
gather = [m for m in ("gather.api", "gather.extraction", "gather.providers") if m in sys.modules]
print(json.dumps({"sdks": loaded, "gather": gather}))
"""


# A fresh interpreter of the service (django.setup and the URLconf), the
# only way to see what loading them imports: seconds of start-up.
@pytest.mark.processes
def test_loading_the_urlconf_imports_neither_provider_sdk():
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=settings.BASE_DIR,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    # The gather API is routed (so its modules loaded), and still no SDK.
    assert seen["gather"] == ["gather.api", "gather.extraction", "gather.providers"]
    assert seen["sdks"] == []
