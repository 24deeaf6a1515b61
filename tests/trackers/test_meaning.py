"""What a tracker's delivery means, beyond assigned and closed (issue 24):
who is who (one stable field per tracker, the operator's map first), which
links are used, closes that are not completions, due dates changed later,
moved issues, long keys, and how the connection's log names people."""

from __future__ import annotations

import copy
import datetime as dt
import re

import pytest

from audit.models import AuditEvent
from audit.services import Actor
from commitments.models import Commitment, OutboxEvent, Status
from commitments.services import commitment_accept
from tests.harness import tracker_payloads as samples
from tests.harness.api import form_key_in
from tests.harness.tracker_payloads import issues_event
from tests.harness.trackers import connect, deliver
from trackers.models import TrackerEvent

pytestmark = pytest.mark.django_db

JIRA_KNIGHT = "5b10ac8d82e05b22cc7d4ef5"
LINEAR_KNIGHT = "5a4e5b3c-0b1a-4e0e-9d1c-3b2a1f0e9d8c"


def _summary() -> str:
    last = TrackerEvent.objects.order_by("-id").first()
    assert last is not None
    return last.summary


def _accepted(assignee) -> Commitment:
    commitment = Commitment.objects.get(assignee=assignee)
    commitment_accept(actor=Actor.for_user(assignee), commitment_id=commitment.pk)
    commitment.refresh_from_db()
    return commitment


@pytest.fixture
def github(assigner, assignee):
    return connect(assigner, "github", system="acme", **{"knight-gh": "knight@example.com"})


@pytest.fixture
def jira(assigner, assignee):
    return connect(assigner, "jira", **{JIRA_KNIGHT: "knight@example.com"})


@pytest.fixture
def linear(assigner, assignee):
    return connect(assigner, "linear", **{LINEAR_KNIGHT: "knight@example.com"})


@pytest.fixture
def gitlab(assigner, assignee):
    return connect(assigner, "gitlab", **{"knight-gl": "knight@example.com"})


def _jira_assigned(assignee_user: dict | None = None, **kwargs):
    payload, _ = samples.jira_samples()["assigned"]
    if assignee_user is not None:
        payload["issue"]["fields"]["assignee"] = assignee_user
    for name, value in kwargs.items():
        payload["issue"][name] = value
    return payload


# --- 3: the identity map is matched against one stable field per tracker ---------------


def test_a_jira_display_name_that_is_someone_elses_account_id_names_nobody(client, jira, assignee):
    connection, secret = jira
    impostor = {
        "accountId": "70121:0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
        "displayName": JIRA_KNIGHT,  # chosen by the impostor: the Knight's accountId
        "active": True,
    }
    response = deliver(client, connection, secret, _jira_assigned(impostor))
    assert response.status_code == 202
    assert Commitment.objects.count() == 0
    [action] = response.json()["actions"]
    assert action["did"] == "skipped"
    assert action["trackerUser"] == impostor["accountId"]


def test_a_linear_name_is_not_matched_only_the_user_id(client, assigner, assignee):
    connection, secret = connect(assigner, "linear", **{"Knight Linear": "knight@example.com"})
    payload, event = samples.linear_samples()["assigned"]
    response = deliver(client, connection, secret, payload, event=event)
    assert response.status_code == 202
    assert Commitment.objects.count() == 0
    assert f"map the user id “{LINEAR_KNIGHT}”" in response.json()["actions"][0]["why"]


def test_jira_server_users_without_an_account_id_are_matched_by_user_name(
    client, assigner, assignee
):
    connection, secret = connect(assigner, "jira", **{"kknight": "knight@example.com"})
    server_user = {"name": "kknight", "key": "JIRAUSER10100", "displayName": "Knight Jira"}
    response = deliver(client, connection, secret, _jira_assigned(server_user))
    assert response.status_code == 200, response.content
    assert Commitment.objects.get().assignee == assignee


# --- 3: links only https, on the connection's site ------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://github.com/acme/app/issues/123",
        "https://evil.example/acme/app/issues/123",
        "https://github.com.evil.example/acme/app/issues/123",
        "https://user:pw@github.com/acme/app/issues/123",
        "javascript:alert(1)",
    ],
)
def test_a_github_link_not_https_on_github_com_is_dropped_and_logged(client, github, url):
    connection, secret = github
    payload = issues_event("assigned")
    payload["issue"]["html_url"] = url
    response = deliver(client, connection, secret, payload)
    assert response.status_code == 200
    commitment = Commitment.objects.get()
    assert commitment.link_url is None
    assert f"The issue's link {url} was not used" in _summary()


def test_a_jira_connection_learns_its_site_from_the_first_delivery(client, jira, assignee):
    connection, secret = jira
    assert connection.site == ""
    deliver(client, connection, secret, _jira_assigned())
    connection.refresh_from_db()
    assert connection.site == "acme.atlassian.net"
    assert "site is now acme.atlassian.net" in _summary()
    assert AuditEvent.objects.filter(action="tracker_connection_site_learnt").count() == 1
    # From then on, a link elsewhere is not used.
    Commitment.objects.all().delete()
    other = _jira_assigned(self="https://evil.example/rest/api/2/issue/10007")
    deliver(client, connection, secret, other)
    assert Commitment.objects.get().link_url is None
    assert "not on acme.atlassian.net" in _summary()


def test_a_self_hosted_gitlab_links_only_to_the_host_set_for_it(client, assigner, assignee):
    connection, secret = connect(assigner, "gitlab", **{"knight-gl": "knight@example.com"})
    from trackers.services import tracker_connection_set_site

    tracker_connection_set_site(connection=connection, site="https://git.example.org/")
    payload, event = samples.gitlab_samples()["assigned"]  # links gitlab.example.com
    deliver(client, connection, secret, payload, event=event)
    assert Commitment.objects.get().link_url is None
    assert "not on git.example.org" in _summary()


def test_the_site_is_set_when_adding_on_the_page_and_by_the_command(client, assigner, settings):
    import io

    from django.core.management import call_command

    from tests.harness.api import sign_in
    from trackers.models import TrackerConnection

    sign_in(client, assigner)

    def add(site: str):
        page = client.get("/settings/trackers/").content.decode()
        key = form_key_in(page)
        data = {"kind": "jira", "system": "", "identities": "", "site": site, "form_key": key}
        return client.post("/settings/trackers/", data)

    bad = add("http://jira.example.com")
    assert bad.status_code == 400
    assert "https address" in bad.content.decode()
    assert add("https://Jira.Example.com/jira/").status_code == 302
    assert TrackerConnection.objects.get().site == "jira.example.com"
    call_command(
        "add_tracker_connection",
        "lead@example.com",
        "--kind",
        "gitlab",
        "--site",
        "git.example.org:8443",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert TrackerConnection.objects.get(kind="gitlab").site == "git.example.org:8443"


def test_the_site_is_changed_on_the_connections_page(client, assigner):
    from tests.harness.api import sign_in

    connection, _ = connect(assigner, "gitlab")
    sign_in(client, assigner)
    url = f"/settings/trackers/{connection.pk}/"
    assert "Not known yet" in client.get(url).content.decode()
    assert client.post(f"{url}site", {"site": "not a host"}).status_code == 302
    connection.refresh_from_db()
    assert connection.site == ""
    assert client.post(f"{url}site", {"site": "git.example.org"}).status_code == 302
    connection.refresh_from_db()
    assert connection.site == "git.example.org"
    assert AuditEvent.objects.filter(action="tracker_connection_site_changed").count() == 1
    assert "https on <code>git.example.org</code>" in client.get(url).content.decode()


# --- 9: closed as not done is withdrawn, not completed (issue 26) ----------------------


def _withdrawn_because(commitment) -> str:
    """The reason of the commitment's withdrawal by the tracker connection,
    after checking it was withdrawn by it, once, with its outbox row."""
    commitment.refresh_from_db()
    assert commitment.status == Status.WITHDRAWN
    assert commitment.withdrawn_at is not None
    assert not OutboxEvent.objects.filter(commitment=commitment, kind="completed").exists()
    event = OutboxEvent.objects.get(commitment=commitment, kind="withdrawn")
    assert (event.previous_status, event.new_status, event.actor_kind) == (
        Status.ACTIVE,
        Status.WITHDRAWN,
        "tracker",
    )
    row = AuditEvent.objects.get(action="withdrawn", subject_id=commitment.pk)
    assert row.actor_kind == "tracker"
    return row.payload["reason"]


def test_github_closed_as_not_planned_is_withdrawn_not_completed(client, github, assignee):
    connection, secret = github
    deliver(client, connection, secret, issues_event("assigned"))
    commitment = _accepted(assignee)
    closed = issues_event("closed")
    closed["issue"]["state_reason"] = "not_planned"
    response = deliver(client, connection, secret, closed)
    assert response.status_code == 200
    assert _withdrawn_because(commitment) == "Closed in GitHub as not planned"
    assert "Closed in GitHub as not planned: withdrawn" in _summary()
    client.force_login(assignee)
    page = client.get(f"/commitments/{commitment.pk}").content.decode()
    assert '<span class="badge status-withdrawn">Withdrawn</span>' in page
    # The conversation says the tracker's words, and when (the page's moments).
    assert "Reason: Closed in GitHub as not planned" in page
    assert "via GitHub connection" in page
    assert re.search(r"<dt>Withdrawn</dt>\s*<dd>", page), page


def test_a_second_close_as_not_done_leaves_a_withdrawn_commitment_as_it_is(
    client, github, assignee
):
    connection, secret = github
    deliver(client, connection, secret, issues_event("assigned"))
    commitment = _accepted(assignee)
    closed = issues_event("closed")
    closed["issue"]["state_reason"] = "not_planned"
    deliver(client, connection, secret, closed)
    outbox = OutboxEvent.objects.count()
    again = copy.deepcopy(closed)  # the same close, told again (not a redelivery of the first)
    again["issue"]["updated_at"] = "2030-01-02T00:00:00Z"
    response = deliver(client, connection, secret, again)
    assert response.status_code == 202  # nothing changed
    assert response.json()["actions"][0]["why"] == "it was withdrawn"
    commitment.refresh_from_db()
    assert commitment.status == Status.WITHDRAWN
    assert AuditEvent.objects.filter(subject_id=commitment.pk, action="withdrawn").count() == 1
    assert OutboxEvent.objects.count() == outbox
    assert "it was withdrawn" in _summary()


def test_github_closed_as_completed_still_completes(client, github, assignee):
    connection, secret = github
    deliver(client, connection, secret, issues_event("assigned"))
    commitment = _accepted(assignee)
    closed = issues_event("closed")
    closed["issue"]["state_reason"] = "completed"
    deliver(client, connection, secret, closed)
    commitment.refresh_from_db()
    assert commitment.status == Status.COMPLETED


def test_a_canceled_linear_issue_is_withdrawn_not_completed(client, linear, assignee):
    connection, secret = linear
    payload, event = samples.linear_samples()["assigned"]
    deliver(client, connection, secret, payload, event=event)
    commitment = _accepted(assignee)
    canceled, event = samples.linear_issue(
        "update", state="canceled", updated_from={"stateId": "0a1b", "canceledAt": None}
    )
    canceled["data"]["state"]["name"] = "Canceled"
    assert deliver(client, connection, secret, canceled, event=event).status_code == 200
    assert _withdrawn_because(commitment) == "Closed in Linear as Canceled"


@pytest.mark.parametrize(
    ("resolution", "status"), [("Won't Do", "Done"), ("Duplicate", "Done"), (None, "Won\u2019t Do")]
)
def test_a_jira_issue_resolved_as_not_done_is_withdrawn_not_completed(
    client, jira, assignee, resolution, status
):
    connection, secret = jira
    deliver(client, connection, secret, _jira_assigned())
    commitment = _accepted(assignee)
    payload, _ = samples.jira_samples()["closed"]
    payload["issue"]["fields"]["status"]["name"] = status
    payload["issue"]["fields"]["resolution"] = {"name": resolution} if resolution else None
    deliver(client, connection, secret, payload)
    said = resolution or status
    assert _withdrawn_because(commitment) == f"Closed in Jira as {said}"


def test_a_gitlab_issue_closed_as_a_duplicate_is_withdrawn_not_completed(client, gitlab, assignee):
    connection, secret = gitlab
    payload, event = samples.gitlab_samples()["assigned"]
    deliver(client, connection, secret, payload, event=event)
    commitment = _accepted(assignee)
    closed, event = samples.gitlab_issue("close")
    closed["object_attributes"]["duplicated_to_id"] = 302
    deliver(client, connection, secret, closed, event=event)
    assert "as a duplicate" in _withdrawn_because(commitment)


def test_a_gitlab_issue_closed_by_a_move_is_not_completed(client, gitlab, assignee):
    connection, secret = gitlab
    payload, event = samples.gitlab_samples()["assigned"]
    deliver(client, connection, secret, payload, event=event)
    commitment = _accepted(assignee)
    closed, event = samples.gitlab_issue("close")
    closed["object_attributes"]["moved_to_id"] = 999
    assert deliver(client, connection, secret, closed, event=event).status_code == 202
    commitment.refresh_from_db()
    assert commitment.status == Status.ACTIVE
    assert "moving it to another project" in _summary()


# --- 10: Jira links keep the site's context path ---------------------------------------


def test_a_jira_link_keeps_the_sites_context_path(client, jira, assignee):
    connection, secret = jira
    payload = _jira_assigned(self="https://jira.example/jira/rest/api/2/issue/30369")
    deliver(client, connection, secret, payload)
    assert Commitment.objects.get().link_url == "https://jira.example/jira/browse/PROJ-7"


# --- 12: long keys are stored shortened, never skipped ----------------------------------


def _long_repo_event(action: str, **kwargs) -> dict:
    payload = issues_event(action, **kwargs)
    repo = f"{'o' * 39}/{'r' * 100}"
    payload["repository"]["full_name"] = repo
    payload["issue"]["html_url"] = f"https://github.com/{repo}/issues/123"
    return payload


def test_a_key_longer_than_an_external_id_makes_a_commitment_found_again(
    client, github, assignee, make_user
):
    connection, secret = github
    make_user("squire@example.com")
    connection.identity_map["squire-gh"] = "squire@example.com"
    connection.save()
    payload = _long_repo_event("opened", assignees=("knight-gh", "squire-gh"))
    response = deliver(client, connection, secret, payload)
    assert response.status_code == 200, response.content
    ids = sorted(Commitment.objects.values_list("external_id", flat=True))
    assert len(ids) == 2 and all(len(i) <= 128 for i in ids)
    assert all(i.startswith("o" * 39 + "/") for i in ids)
    # The log keeps the whole key; the commitments link the issue itself.
    assert TrackerEvent.objects.get().external_id == f"{'o' * 39}/{'r' * 100}#123"
    assert Commitment.objects.filter(link_url__endswith="/issues/123").count() == 2
    # The close finds both.
    for commitment in Commitment.objects.all():
        commitment_accept(actor=Actor.for_user(commitment.assignee), commitment_id=commitment.pk)
    deliver(client, connection, secret, _long_repo_event("closed"))
    assert set(Commitment.objects.values_list("status", flat=True)) == {Status.COMPLETED}


def test_a_skip_message_has_one_full_stop(client, github):
    connection, secret = github
    payload = issues_event("assigned")
    payload["issue"]["title"] = "   "
    response = deliver(client, connection, secret, payload)
    assert response.json()["actions"][0]["did"] == "skipped"
    assert ".." not in response.json()["summary"]
    assert response.json()["summary"].endswith(".")


# --- 13: due dates changed later, moved issues, born overdue --------------------------


def test_a_github_milestone_set_later_renegotiates_a_pending_commitment(client, github):
    connection, secret = github
    first = issues_event("assigned")
    first["issue"]["milestone"] = None
    deliver(client, connection, secret, first)
    commitment = Commitment.objects.get()
    assert commitment.deadline is None
    milestoned = issues_event("milestoned")  # the milestone is due 2030-03-01
    response = deliver(client, connection, secret, milestoned)
    assert response.status_code == 200, response.content
    commitment.refresh_from_db()
    assert commitment.deadline is not None and commitment.deadline.date() == dt.date(2030, 3, 1)
    assert commitment.status == Status.PENDING_HANDSHAKE
    assert OutboxEvent.objects.filter(commitment=commitment, kind="renegotiated").count() == 1
    assert response.json()["actions"][0]["did"] == "renegotiated"


def test_a_jira_due_date_changed_on_an_accepted_commitment_is_recorded(client, jira, assignee):
    connection, secret = jira
    deliver(client, connection, secret, _jira_assigned())
    commitment = _accepted(assignee)
    accepted_deadline = commitment.deadline
    payload, _ = samples.jira_issue(
        "jira:issue_updated",
        "issue_updated",
        items=[{"field": "duedate", "fromString": "2030-03-01", "toString": "2030-04-15"}],
    )
    payload["issue"]["fields"]["duedate"] = "2030-04-15"
    response = deliver(client, connection, secret, payload)
    assert response.status_code == 200, response.content
    commitment.refresh_from_db()
    assert commitment.status == Status.ACTIVE
    assert commitment.deadline == accepted_deadline  # terms change only by a handshake
    row = AuditEvent.objects.get(action="source_deadline_changed")
    assert "is now 2030-04-15" in row.payload["words"]
    assert not OutboxEvent.objects.filter(commitment=commitment, kind="renegotiated").exists()
    client.force_login(assignee)
    page = client.get(f"/commitments/{commitment.pk}").content.decode()
    assert "The due date in Jira is now 2030-04-15" in page


def test_a_gitlab_due_date_change_renegotiates(client, gitlab):
    connection, secret = gitlab
    payload, event = samples.gitlab_samples()["assigned"]
    deliver(client, connection, secret, payload, event=event)
    changed, event = samples.gitlab_issue(
        "update", changes={"due_date": {"previous": "2030-03-01", "current": "2030-05-01"}}
    )
    changed["object_attributes"]["due_date"] = "2030-05-01"
    assert deliver(client, connection, secret, changed, event=event).status_code == 200
    assert Commitment.objects.get().deadline.date() == dt.date(2030, 5, 1)


def test_a_linear_due_date_removed_renegotiates(client, linear):
    connection, secret = linear
    payload, event = samples.linear_samples()["assigned"]
    deliver(client, connection, secret, payload, event=event)
    changed, event = samples.linear_issue("update", updated_from={"dueDate": "2030-03-01"})
    changed["data"]["dueDate"] = None
    assert deliver(client, connection, secret, changed, event=event).status_code == 200
    assert Commitment.objects.get().deadline is None


def test_a_jira_issue_moved_to_another_project_keeps_its_commitment(client, jira, assignee):
    connection, secret = jira
    deliver(client, connection, secret, _jira_assigned())
    commitment = _accepted(assignee)
    moved, _ = samples.jira_issue(
        "jira:issue_updated",
        "issue_moved",
        items=[
            {"field": "project", "fromString": "Project", "toString": "Operations"},
            {"field": "Key", "fromString": "PROJ-7", "toString": "OPS-3"},
        ],
    )
    moved["issue"]["key"] = "OPS-3"
    response = deliver(client, connection, secret, moved)
    assert response.status_code == 200, response.content
    commitment.refresh_from_db()
    assert commitment.external_id == "OPS-3"
    assert commitment.link_url == "https://acme.atlassian.net/browse/OPS-3"
    row = AuditEvent.objects.get(action="external_ref_changed")
    assert row.payload["previousExternalId"] == "PROJ-7"
    # Later events on the new key find it.
    closed, _ = samples.jira_samples()["closed"]
    closed["issue"]["key"] = "OPS-3"
    deliver(client, connection, secret, closed)
    commitment.refresh_from_db()
    assert commitment.status == Status.COMPLETED


def test_a_linear_issue_moved_to_another_team_keeps_its_commitment(client, linear):
    connection, secret = linear
    payload, event = samples.linear_samples()["assigned"]
    deliver(client, connection, secret, payload, event=event)
    moved, event = samples.linear_issue("update", updated_from={"teamId": "old"})
    moved["data"]["identifier"] = "OPS-9"
    moved["data"]["previousIdentifiers"] = ["ENG-42"]
    deliver(client, connection, secret, moved, event=event)
    assert Commitment.objects.get().external_id == "OPS-9"


def test_an_issue_assigned_past_its_due_date_says_so(client, github, assignee):
    from notifications.nudges import nudge_message

    connection, secret = github
    payload = issues_event("assigned")
    payload["issue"]["milestone"]["due_on"] = "2020-01-10T00:00:00Z"
    response = deliver(client, connection, secret, payload)
    assert response.status_code == 200
    assert "Its due date, 2020-01-10, had passed already" in response.json()["summary"]
    commitment = Commitment.objects.get()
    client.force_login(assignee)
    page = client.get(f"/commitments/{commitment.pk}").content.decode()
    assert "It had passed when it was asked." in page
    event = OutboxEvent.objects.get(commitment=commitment)
    message = nudge_message(event=event, recipient=assignee)
    assert "had passed already when you were asked" in message.text


# --- 14: the log names people by their display name ------------------------------------


def test_the_log_names_a_jira_user_by_display_name(client, jira, assignee):
    connection, secret = jira
    deliver(client, connection, secret, _jira_assigned())
    summary = _summary()
    assert "Knight Jira" in summary
    assert JIRA_KNIGHT not in summary
    stranger = {"accountId": "557058:abc", "displayName": "Stranger Jira"}
    deliver(client, connection, secret, _jira_assigned(stranger))
    # An unmapped one: the name, and the accountId to map.
    assert "Skipped Stranger Jira: not in the identity map (map the accountId “557058:abc”)" in (
        _summary()
    )
