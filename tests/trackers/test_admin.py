"""The tracker connections admin: staff see a connection and its deliveries,
read-only, never its secret."""

from __future__ import annotations

import pytest

from tests.harness.tracker_payloads import issues_event
from tests.harness.trackers import connect, deliver

pytestmark = pytest.mark.django_db


def test_staff_see_a_connection_and_its_deliveries_but_not_its_secret(
    client, staff_client, assigner
):
    connection, secret = connect(assigner, "github", system="acme")
    deliver(client, connection, secret, issues_event("labeled"))
    listing = staff_client.get("/admin/trackers/trackerconnection/")
    assert listing.status_code == 200
    assert "acme" in listing.content.decode()
    page = staff_client.get(f"/admin/trackers/trackerconnection/{connection.pk}/change/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "issues.labeled" in html
    assert secret not in html
    assert staff_client.get("/admin/trackers/trackerconnection/add/").status_code == 403
