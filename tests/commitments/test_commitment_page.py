"""The commitment page (docs/pages.md, "The commitment page"): the description
as heading and title, a timeline that names tokens and says what a
renegotiation changed, one word for the Refused status, a confirmation before
decline and complete, a warning before renegotiating to a past deadline, and a
fixed number of queries however many commitments there are."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import Actor
from commitments import links, services
from commitments.models import Commitment, Status
from tests.harness.api import INBOX, inbox_body, mint, post_json
from tests.harness.commitments import DEADLINE, commitment_in, many_commitments, snapshot

pytestmark = pytest.mark.django_db

LATER = dt.datetime(2030, 3, 1, 12, 0, tzinfo=dt.UTC)


def page_of(client, c: Commitment, suffix: str = "") -> str:
    response = client.get(f"/commitments/{c.pk}{suffix}")
    assert response.status_code == 200
    return response.content.decode()


def timeline(page: str) -> str:
    return re.sub(r"\s+", " ", page[page.index('id="timeline-heading"') :])


# --- heading and title -----------------------------------------------------------------


def test_the_description_is_the_heading_and_the_title(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assignee)

    page = page_of(client, c)

    assert "<title>Write the report · Commitments</title>" in page
    assert re.search(r'<h1 class="commitment-title">Write the report</h1>', page)
    assert page.count("<h1") == 1


def test_a_long_description_is_headed_by_a_line_and_goes_on_below(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    long = "Rewrite the whole onboarding guide " * 10
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=c.pk, description=long
    )
    client.force_login(assignee)

    page = page_of(client, c)

    title = re.search(r"<title>(.*?) · Commitments</title>", page).group(1)
    assert len(title) <= 70 and title.endswith("…")
    # The heading is a line (lib.text.title_and_body), the rest of it below.
    heading = re.search(r'<h1 class="commitment-title">(.*?)</h1>', page).group(1)
    assert (
        heading == "Rewrite the whole onboarding guide Rewrite the whole onboarding guide Rewrite…"
    )
    body = re.search(r'<p class="commitment-body">(.*?)</p>', page).group(1)
    assert heading[:-1] + " " + body[1:] == long.strip()


def test_a_description_of_lines_is_headed_by_its_first(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner),
        commitment_id=c.pk,
        description="Ship the report\nWith the Q3 numbers.\nAnd the charts.",
    )
    client.force_login(assignee)

    page = page_of(client, c)

    assert '<h1 class="commitment-title">Ship the report</h1>' in page
    assert '<p class="commitment-body">With the Q3 numbers.<br>And the charts.</p>' in page


# --- the timeline ------------------------------------------------------------------------


def test_the_timeline_names_the_token_that_created_it_through_the_api(client, assigner, assignee):
    token = mint(assigner, name="Jira automation")
    response = post_json(client, INBOX, inbox_body(), token=token)
    assert response.status_code == 201, response.content
    c = Commitment.objects.get(pk=response.json()["id"])
    event = AuditEvent.objects.for_object(c).get(action="created")
    assert event.token_name == "Jira automation"
    client.force_login(assignee)

    page = page_of(client, c)

    assert "Asked for a handshake</strong> by Lead via API token “Jira automation”" in timeline(
        page
    )
    assert token[:8] not in page and event.token_prefix not in page


def test_the_timeline_says_what_a_renegotiation_changed_in_the_viewers_zone(
    client, assigner, assignee
):
    assignee.timezone = "Asia/Tokyo"
    assignee.save()
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)  # deadline 1 Jan 2030 UTC
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner),
        commitment_id=c.pk,
        description="Write the report, in French",
        deadline=LATER,
    )
    event = AuditEvent.objects.for_object(c).get(action="renegotiated")
    assert event.payload["previous"] == {
        "description": "Write the report",
        "deadline": DEADLINE.isoformat(),
    }
    client.force_login(assignee)

    rows = timeline(page_of(client, c))

    # Tokyo is nine hours ahead of UTC.
    assert (
        "Description: <del>Write the report</del> → <ins>Write the report, in French</ins>"
    ) in rows
    assert re.search(r"Deadline: <del><time [^>]*>1 Jan 2030, 09:00</time></del> → ", rows)
    assert re.search(r"→ <ins><time [^>]*>1 Mar 2030, 21:00</time></ins>", rows)


def test_removing_the_deadline_reads_as_none(client, assigner, assignee):
    c = commitment_in(Status.REFUSED, assigner, assignee)
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=c.pk, deadline=None
    )
    client.force_login(assigner)

    rows = timeline(page_of(client, c))

    assert re.search(
        r"Deadline: <del><time [^>]*>1 Jan 2030, 00:00</time></del> → <ins>none</ins>", rows
    )


def test_a_renegotiation_recorded_before_old_values_were_kept_shows_the_new_ones(
    client, assigner, assignee
):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    from audit.services import audit_event_record

    audit_event_record(
        actor=Actor.for_user(assigner),
        subject=c,
        action="renegotiated",
        payload={"changes": {"description": "Older shape"}, "termsVersion": 2},
    )
    client.force_login(assignee)

    rows = timeline(page_of(client, c))

    assert "Description: <ins>Older shape</ins>" in rows
    assert "<del>" not in rows


def test_refused_is_declined_on_every_page(client, assigner, assignee):
    c = commitment_in(Status.REFUSED, assigner, assignee)

    client.force_login(assigner)
    for path in (f"/commitments/{c.pk}", "/dashboard/", "/dashboard/?status=Refused"):
        page = client.get(path).content.decode()
        assert "Declined" in page, path
        assert "Refused" not in page.replace("status=Refused", ""), path
    client.force_login(assignee)
    page = client.get("/").content.decode()
    # The Accord names the status once, in its section's heading.
    assert '<h2 id="accord-declined">Declined <span class="badge status-refused">1</span>' in page
    assert "Refused" not in page


# --- decline and complete ask to confirm --------------------------------------------------


@pytest.mark.parametrize(
    ("action", "before", "role", "after", "question"),
    [
        ("decline", Status.PENDING_HANDSHAKE, "assignee", Status.REFUSED, "Decline this"),
        ("complete", Status.ACTIVE, "assignee", Status.COMPLETED, "Mark this commitment"),
        ("complete", Status.ACTIVE, "assigner", Status.COMPLETED, "Mark this commitment"),
    ],
)
def test_the_button_asks_to_confirm_and_the_confirmation_makes_the_move(
    client, assigner, assignee, action, before, role, after, question
):
    c = commitment_in(before, assigner, assignee)
    unchanged = snapshot(c)
    client.force_login({"assigner": assigner, "assignee": assignee}[role])

    detail = page_of(client, c)
    confirm_url = f"/commitments/{c.pk}/{action}/confirm"
    assert f'href="{confirm_url}"' in detail
    confirm = page_of(client, c, f"/{action}/confirm")

    assert snapshot(c) == unchanged  # asking changes nothing
    assert question in confirm and "cannot be undone" in confirm
    assert f'<form method="post" action="/commitments/{c.pk}/{action}"' in confirm
    assert f'href="/commitments/{c.pk}">Cancel</a>' in confirm
    version = re.search(r'name="terms_version" value="(\d+)"', confirm).group(1)
    response = client.post(f"/commitments/{c.pk}/{action}", {"terms_version": version})
    assert response.status_code == 302
    c.refresh_from_db()
    assert c.status == after


def test_completing_after_the_deadline_says_it_counts_as_late(client, assigner, assignee):
    c = commitment_in(
        Status.ACTIVE, assigner, assignee, deadline=timezone.now() - dt.timedelta(days=1)
    )
    client.force_login(assignee)

    confirm = page_of(client, c, "/complete/confirm")

    assert "counts toward your Flow Score: as completed late" in confirm


def test_a_confirmation_for_a_move_no_longer_possible_goes_back_with_the_reason(
    client, assigner, assignee
):
    c = commitment_in(Status.REFUSED, assigner, assignee)  # declined in another tab
    client.force_login(assignee)

    response = client.get(f"/commitments/{c.pk}/decline/confirm", follow=True)

    assert response.redirect_chain == [(f"/commitments/{c.pk}", 302)]
    assert "You cannot decline this commitment now: its status is Declined." in (
        response.content.decode()
    )


@pytest.mark.parametrize("action", ["decline", "complete"])
def test_an_outsider_gets_404_on_a_confirmation(client, assigner, assignee, outsider, action):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    client.force_login(outsider)

    assert client.get(f"/commitments/{c.pk}/{action}/confirm").status_code == 404


def test_a_signed_out_confirmation_goes_to_sign_in(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)

    response = client.get(f"/commitments/{c.pk}/decline/confirm")

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


# --- the decline reason -------------------------------------------------------------------


def test_the_decline_reason_is_on_the_page_for_both_people(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    services.commitment_decline(
        actor=Actor.for_user(assignee), commitment_id=c.pk, reason="Too <b>dangerous</b>"
    )

    for person in (assigner, assignee):
        client.force_login(person)
        page = page_of(client, c)
        rows = timeline(page)
        said = '<p class="reason">Reason: Too &lt;b&gt;dangerous&lt;/b&gt;</p>'
        assert re.search(r"Declined</strong> by \w+ " + re.escape(said), rows), person
        assert '<dt>Reason given</dt>\n    <dd class="break">Too &lt;b&gt;dangerous' in page


def test_a_renegotiation_keeps_the_reason_in_the_timeline_only(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    services.commitment_decline(
        actor=Actor.for_user(assignee), commitment_id=c.pk, reason="Not this week"
    )
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=c.pk, description="Next week, then"
    )
    client.force_login(assigner)

    page = page_of(client, c)

    assert "Reason: Not this week" in timeline(page)
    assert "Reason given" not in page  # the decline no longer stands


def test_declining_from_the_commitment_page_takes_a_reason(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assignee)

    confirm = page_of(client, c, "/decline/confirm")

    assert '<label for="decline-reason">Reason (optional)</label>' in confirm
    assert re.search(r'<textarea id="decline-reason" name="reason" maxlength="500"', confirm)
    version = re.search(r'name="terms_version" value="(\d+)"', confirm).group(1)
    response = client.post(
        f"/commitments/{c.pk}/decline", {"terms_version": version, "reason": " Too far away "}
    )
    assert response.status_code == 302
    event = AuditEvent.objects.for_object(c).get(action="declined")
    assert event.payload["reason"] == "Too far away"
    client.force_login(assigner)
    assert "Reason: Too far away" in timeline(page_of(client, c))


def test_completing_has_no_reason_field(client, assigner, assignee):
    c = commitment_in(Status.ACTIVE, assigner, assignee)
    client.force_login(assignee)

    assert 'name="reason"' not in page_of(client, c, "/complete/confirm")


# --- transition times and the way back -----------------------------------------------------


def test_the_transition_times_are_in_the_order_they_happened(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    services.commitment_decline(actor=Actor.for_user(assignee), commitment_id=c.pk)
    services.commitment_renegotiate(
        actor=Actor.for_user(assigner), commitment_id=c.pk, description="Again, please"
    )
    client.force_login(assignee)

    page = page_of(client, c)

    facts = page[page.index('<dl class="facts">') : page.index("</dl>")]
    names = re.findall(r"<dt>(\w+)</dt>", facts)
    assert names[-3:] == ["Created", "Declined", "Renegotiated"]


def test_the_way_back_names_the_list(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)

    client.force_login(assigner)
    assert '<a href="/dashboard/#asked">Back to the dashboard</a>' in page_of(client, c)
    client.force_login(assignee)
    assert f'<a href="/#c-{c.pk}">Back to the Accord</a>' in page_of(client, c)


# --- renegotiating to a past deadline ------------------------------------------------------


def terms_post(c: Commitment, deadline: str, **extra) -> dict:
    return {
        "description": c.description,
        "deadline": deadline,
        "terms_version": c.terms_version,
        **extra,
    }


@pytest.mark.parametrize("status", [Status.PENDING_HANDSHAKE, Status.REFUSED])
def test_a_past_deadline_warns_and_changes_nothing_until_confirmed(
    client, assigner, assignee, status
):
    c = commitment_in(status, assigner, assignee)
    before = snapshot(c)
    client.force_login(assigner)
    past = (timezone.now() - dt.timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")

    response = client.post(f"/commitments/{c.pk}/terms", terms_post(c, past))

    assert response.status_code == 200
    page = response.content.decode()
    assert "That deadline has passed" in page
    assert 'name="confirm_past_deadline" value="1"' in page
    assert f'value="{past}"' in page  # the form keeps what was typed
    assert snapshot(c) == before

    response = client.post(
        f"/commitments/{c.pk}/terms", terms_post(c, past, confirm_past_deadline="1")
    )

    assert response.status_code == 302
    c.refresh_from_db()
    assert c.status == Status.PENDING_HANDSHAKE
    assert c.deadline.strftime("%Y-%m-%dT%H:%M") == past


def test_a_future_deadline_renegotiates_at_once(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    client.force_login(assigner)

    response = client.post(f"/commitments/{c.pk}/terms", terms_post(c, "2031-05-01T10:00"))

    assert response.status_code == 302
    c.refresh_from_db()
    assert c.terms_version == 2


# --- queries ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [10, 1000])
def test_the_page_costs_the_same_queries_at_10_and_1000_commitments(
    client, assigner, assignee, django_assert_num_queries, n
):
    many_commitments(assigner, assignee, n)
    links.link_template_add(
        owner=assigner, system="jira", template="https://example.atlassian.net/browse/{externalId}"
    )
    c = services.commitment_create_pending(
        actor=Actor.for_user(assigner),
        assigner=assigner,
        assignee=assignee,
        description="The one",
        deadline=None,
        external_system="jira",
        external_id="ONE-1",
    )
    client.force_login(assignee)
    client.get(f"/commitments/{c.pk}")  # warm the content-type cache

    # session, user, the commitment, its timeline, its deep link
    # + the navigation's count of requests waiting (commitments.context_processors)
    with django_assert_num_queries(6):
        page = page_of(client, c)

    assert 'href="https://example.atlassian.net/browse/ONE-1"' in page
