"""What the page says to do with a new Linear connection's URL and secret
agrees with Linear and docs/trackers/linear.md: Linear makes its own signing
secret (its webhook form has no field for one), which is pasted back on the
connection's page; other trackers take ours."""

from __future__ import annotations

import re

import pytest

from tests.harness.api import form_key_in, sign_in

pytestmark = pytest.mark.django_db
PAGE = "/settings/trackers/"


def added(client, kind: str) -> str:
    page = client.get(PAGE).content.decode()
    key = form_key_in(page)
    response = client.post(PAGE, {"kind": kind, "system": "", "identities": "", "form_key": key})
    assert response.status_code == 302
    shown = client.get(PAGE).content.decode()
    return re.sub(r"\s+", " ", shown[shown.index('id="shown-heading"') :])


def test_a_new_linear_connection_says_to_paste_linears_secret_here(client, assigner):
    sign_in(client, assigner)

    shown = added(client, "linear")

    assert "Paste the URL and the secret into Linear" not in shown
    assert "Paste the URL into Linear's webhook settings." in shown
    assert "Linear makes its own signing secret" in shown
    assert "under <em>Linear's signing secret</em>" in shown


def test_a_new_github_connection_says_to_paste_both(client, assigner):
    sign_in(client, assigner)

    assert "Paste the URL and the secret into GitHub's webhook settings." in added(client, "github")
