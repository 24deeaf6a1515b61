"""Every page names its icon, so browsers do not ask for a /favicon.ico that 404s."""

from __future__ import annotations

import re


def test_pages_link_an_icon_that_is_served(client, assigner):
    client.force_login(assigner)

    page = client.get("/").content.decode()
    href = re.search(r'<link rel="icon" href="([^"]+)"', page).group(1)
    icon = client.get(href)

    assert icon.status_code == 200
    assert b"<svg" in b"".join(icon.streaming_content if icon.streaming else [icon.content])
