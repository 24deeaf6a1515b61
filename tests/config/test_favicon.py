"""Every page names its icon, so browsers do not ask for a /favicon.ico that 404s."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles import finders


def test_pages_link_an_icon_that_is_a_static_file(client, assigner):
    client.force_login(assigner)

    page = client.get("/").content.decode()
    href = re.search(r'<link rel="icon" href="([^"]+)"', page).group(1)

    assert href.startswith(settings.STATIC_URL)
    found = finders.find(href.removeprefix(settings.STATIC_URL))
    assert found and "<svg" in Path(found).read_text()
