"""The page's script (static/js/test_nudge.js), run by Node against
a live server with a signed-in session: it polls the status URL while the
test waits for the worker, shows the result once the worker has written it,
and stops. (A stand-in for the page's DOM; the browser tests drive the page
itself.)"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.urls import reverse

from lib import jobs

# The services by their module: a `test_*` name imported here would be
# collected by pytest as a test.
from notifications import services

HARNESS = Path(__file__).parent / "js" / "poll_harness.js"
SCRIPT = Path(django_settings.BASE_DIR) / "static" / "js" / "test_nudge.js"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
@pytest.mark.django_db(transaction=True)
def test_the_script_polls_until_the_result_arrives_and_shows_it(
    live_server, client, assignee, monkeypatch, settings
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []
    monkeypatch.setattr(jobs, "enqueue", lambda *args, **kwargs: True)  # no worker yet
    test = services.test_nudge_request(user=assignee)
    client.force_login(assignee)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    node = subprocess.Popen(
        [
            "node",
            str(HARNESS),
            str(SCRIPT),
            live_server.url,
            reverse("test_nudge_status", args=[test.pk]),
            cookie,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(2.5)  # it polls (once a second) while the test waits
        assert node.poll() is None
        assert services.test_nudge_send(test_id=test.pk) == "sent"  # the worker's part
        out, err = node.communicate(timeout=30)
    finally:
        if node.poll() is None:
            node.kill()
    assert node.returncode == 0, err
    result = json.loads(out)
    assert result["stopped"] is True
    assert result["polls"] >= 2
    assert "Accepted" in result["html"]
    assert "E-mail accepted the test message (knight@example.com)." in result["html"]
