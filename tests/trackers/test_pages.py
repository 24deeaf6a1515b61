"""Settings, Tracker connections: add (the secret shown once, POST-redirect-
GET), the connection's page and its events, the identity map, rotate, delete;
only the owner's own connections."""

from __future__ import annotations

import re

import pytest

from audit.models import AuditEvent
from tests.harness.api import form_key_in, sign_in
from tests.harness.tracker_payloads import issues_event
from tests.harness.trackers import connect, deliver
from trackers.models import TrackerConnection, TrackerEvent

pytestmark = pytest.mark.django_db
PAGE = "/settings/trackers/"
SECRET_RE = re.compile(r'<code id="shown-secret">(trk_[0-9a-f]{64})</code>')


@pytest.fixture
def signed_in(client, assigner):
    sign_in(client, assigner)
    return client


def _key(client) -> str:
    page = client.get(PAGE).content.decode()
    return form_key_in(page)


def add(client, **fields):
    data = {"kind": "github", "system": "", "identities": "", "form_key": _key(client)}
    data.update(fields)
    return client.post(PAGE, data)


def test_the_page_needs_a_signed_in_user(client, db):
    assert client.get(PAGE).status_code == 302
    assert client.post(PAGE, {"kind": "github"}).status_code == 302
    assert not TrackerConnection.objects.exists()


def test_adding_shows_the_url_and_the_secret_once(signed_in, assigner, assignee):
    response = add(signed_in, identities="knight-gh=knight@example.com\n\n")
    assert response.status_code == 302 and response["Location"] == PAGE
    page = signed_in.get(PAGE)
    html = page.content.decode()
    assert "no-store" in page["Cache-Control"]
    secret = SECRET_RE.search(html).group(1)
    connection = TrackerConnection.objects.get()
    assert connection.owner == assigner and connection.system == "github"
    assert connection.secret == secret
    assert connection.identity_map == {"knight-gh": "knight@example.com"}
    assert f"http://localhost:3000/api/v1/hooks/{connection.hook_id}" in html
    assert "GitHub connection “github”" in html
    again = signed_in.get(PAGE).content.decode()
    assert secret not in again
    # And the secret works.
    assert deliver(signed_in, connection, secret, issues_event("assigned")).status_code == 200


def test_a_resent_form_adds_nothing(signed_in):
    key = _key(signed_in)
    data = {"kind": "gitlab", "system": "", "identities": "", "form_key": key}
    assert signed_in.post(PAGE, data).status_code == 302
    assert signed_in.post(PAGE, data).status_code == 302
    assert TrackerConnection.objects.count() == 1


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"identities": "just-a-login"}, "LOGIN=EMAIL"),
        ({"identities": "a=not-an-address"}, "not an e-mail address"),
        ({"system": "x" * 33}, "at most 32"),
        ({"kind": "trello"}, "trello"),
    ],
)
def test_bad_input_is_shown_and_adds_nothing(signed_in, fields, message):
    response = add(signed_in, **fields)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not TrackerConnection.objects.exists()


def test_the_connection_page_lists_what_each_delivery_did(client, signed_in, assigner, assignee):
    connection, secret = connect(assigner, "github", **{"knight-gh": "knight@example.com"})
    deliver(client, connection, secret, issues_event("assigned"))
    deliver(client, connection, secret, issues_event("assigned", assignees=("stranger",)))
    html = signed_in.get(f"{PAGE}{connection.pk}/").content.decode()
    assert "Created a commitment for knight-gh" in html
    assert "Skipped stranger: not in the identity map" in html
    assert html.count("issues.assigned") == 2
    assert connection.secret not in html


def test_the_page_shows_the_last_50_events(signed_in, assigner):
    connection, _ = connect(assigner, "jira")
    TrackerEvent.objects.bulk_create(
        TrackerEvent(
            connection=connection, delivery_id=f"d{n}", outcome="nothing", summary=f"S{n}:"
        )
        for n in range(55)
    )
    html = signed_in.get(f"{PAGE}{connection.pk}/").content.decode()
    assert html.count("<tr>") - 1 == 50


def test_editing_the_people(signed_in, assigner):
    connection, _ = connect(assigner, "gitlab")
    url = f"{PAGE}{connection.pk}/"
    response = signed_in.post(url, {"identities": "alice=Alice@Example.com\nbob=bob@example.com"})
    assert response.status_code == 302
    connection.refresh_from_db()
    assert connection.identity_map == {"alice": "alice@example.com", "bob": "bob@example.com"}
    assert AuditEvent.objects.filter(action="tracker_connection_identities_changed").count() == 1
    bad = signed_in.post(url, {"identities": "alice"})
    assert bad.status_code == 400
    connection.refresh_from_db()
    assert len(connection.identity_map) == 2


def test_rotating_shows_the_new_secret_once(client, signed_in, assigner):
    connection, old = connect(assigner, "github")
    url = f"{PAGE}{connection.pk}/rotate"
    assert signed_in.get(url).status_code == 200
    response = signed_in.post(url)
    assert response.status_code == 302
    html = signed_in.get(response["Location"]).content.decode()
    new = SECRET_RE.search(html).group(1)
    assert new != old
    connection.refresh_from_db()
    assert connection.secret == new
    assert SECRET_RE.search(signed_in.get(response["Location"]).content.decode()) is None
    assert deliver(client, connection, old, issues_event("closed")).status_code == 401


def test_deleting(client, signed_in, assigner):
    connection, secret = connect(assigner, "github")
    response = signed_in.post(f"{PAGE}{connection.pk}/delete")
    assert response.status_code == 302
    assert not TrackerConnection.objects.exists()
    assert deliver(client, connection, secret, issues_event("closed")).status_code == 401


def test_another_persons_connection_is_not_found(signed_in, outsider):
    connection, _ = connect(outsider, "github")
    for suffix in ("", "rotate", "delete"):
        assert signed_in.get(f"{PAGE}{connection.pk}/{suffix}").status_code == 404
        assert signed_in.post(f"{PAGE}{connection.pk}/{suffix}").status_code == 404
    assert TrackerConnection.objects.get() == connection


def test_a_linear_connection_can_use_linears_own_secret(client, signed_in, assigner):
    from tests.harness import tracker_payloads as payload_samples

    connection, ours = connect(assigner, "linear")
    url = f"{PAGE}{connection.pk}/"
    assert "Linear's signing secret" in signed_in.get(url).content.decode()
    linears = "lin_wh_0123456789abcdefABCDEF"
    assert signed_in.post(f"{url}tracker-secret", {"secret": "short"}).status_code == 302
    connection.refresh_from_db()
    assert connection.secret == ours
    assert signed_in.post(f"{url}tracker-secret", {"secret": linears}).status_code == 302
    connection.refresh_from_db()
    assert connection.secret == linears
    payload, event = payload_samples.linear_samples()["unrelated"]
    assert deliver(client, connection, linears, payload, event=event).status_code == 202
    assert deliver(client, connection, ours, payload, event=event).status_code == 401


def test_other_kinds_do_not_offer_a_trackers_secret(signed_in, assigner):
    connection, _ = connect(assigner, "github")
    assert (
        "Linear's signing secret" not in signed_in.get(f"{PAGE}{connection.pk}/").content.decode()
    )
