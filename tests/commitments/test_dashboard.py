"""The dashboard (docs/pages.md, "The dashboard"): what needs the person first,
the Flow Score with its parts and its last 90 days as an SVG chart whose
points link to what moved them, sections only for the roles a person has,
pagination, and the same number of queries at 10 and 1,000 commitments."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from audit.services import Actor
from commitments import selectors, services
from commitments.models import Commitment, Status
from commitments.selectors_dashboard import flow_score_day_moves, flow_score_history
from tests.harness.commitments import commitment_in, many_commitments

pytestmark = pytest.mark.django_db

DAY = dt.timedelta(days=1)
NOW = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)


def make(assigner, assignee, status, **fields) -> Commitment:
    return Commitment.objects.create(
        assigner=assigner,
        assignee=assignee,
        status=status,
        description=fields.pop("description", "Task"),
        **fields,
    )


def kept(assigner, assignee, *, at, description="kept one") -> Commitment:
    return make(
        assigner,
        assignee,
        Status.COMPLETED,
        description=description,
        activated_at=at - 10 * DAY,
        deadline=at + DAY,
        completed_at=at,
    )


def late(assigner, assignee, *, deadline, completed_at=None, description="late one"):
    return make(
        assigner,
        assignee,
        Status.COMPLETED if completed_at else Status.ACTIVE,
        description=description,
        activated_at=deadline - 10 * DAY,
        deadline=deadline,
        completed_at=completed_at,
    )


def dashboard(client, user, query: str = "") -> str:
    client.force_login(user)
    response = client.get(f"/dashboard/{query}")
    assert response.status_code == 200
    return response.content.decode()


# --- needs your attention ----------------------------------------------------------------


def test_what_needs_attention_comes_first(client, assigner, assignee, make_user):
    teammate = make_user(display_name="Teammate")
    now = timezone.now()
    declined = commitment_in(Status.REFUSED, assigner, assignee)
    draft = commitment_in(Status.DRAFT, assigner, assignee)
    mine_late = late(teammate, assigner, deadline=now - 2 * DAY, description="Lead owes this")
    theirs_late = late(assigner, assignee, deadline=now - DAY, description="Knight owes Lead")

    page = dashboard(client, assigner)

    attention = page[page.index('id="attention"') : page.index('id="flow"')]
    assert page.index('id="attention"') < page.index('id="flow"') < page.index('id="asked"')
    assert "Overdue, yours to do" in attention and mine_late.description in attention
    assert "Overdue, asked by you" in attention and theirs_late.description in attention
    assert "Declined: renegotiate or let go" in attention
    assert f'href="/commitments/{declined.pk}#terms-heading"' in attention
    assert "Drafts to send" in attention
    assert f'<form method="post" action="/commitments/{draft.pk}/send"' in attention
    assert "Nothing needs you now" not in page


def test_a_declined_request_says_the_reason_given(client, assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    services.commitment_decline(
        actor=Actor.for_user(assignee), commitment_id=c.pk, reason="No <time>"
    )
    quiet = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee)
    services.commitment_decline(actor=Actor.for_user(assignee), commitment_id=quiet.pk)

    page = dashboard(client, assigner)

    attention = page[page.index('id="attention"') : page.index('id="flow"')]
    assert ": “No &lt;time&gt;”</span></li>" in attention
    assert attention.count("“") == 1  # none for the decline without a reason


def test_nothing_needing_attention_says_so(client, assigner, assignee):
    commitment_in(Status.ACTIVE, assigner, assignee)  # due in 2030

    page = dashboard(client, assigner)

    assert "Nothing needs you now" in page
    assert "Overdue" not in page[: page.index('id="flow"')]


def test_a_long_attention_list_shows_a_few_and_links_to_all(client, assigner, assignee):
    for n in range(7):
        services.commitment_create_draft(
            actor=Actor.for_user(assigner), assignee=assignee, description=f"Draft {n}"
        )

    page = dashboard(client, assigner)

    attention = page[page.index('id="attention"') : page.index('id="flow"')]
    assert attention.count("/send") == 5
    assert '<a href="?status=Draft#asked">All 7 drafts</a>' in attention


# --- the Flow Score ------------------------------------------------------------------------


def test_the_score_comes_with_its_parts(client, assigner, assignee):
    now = timezone.now()
    kept(assigner, assignee, at=now - 2 * DAY)
    kept(assigner, assignee, at=now - 3 * DAY)
    late(assigner, assignee, deadline=now - 5 * DAY, completed_at=now - 4 * DAY)
    late(assigner, assignee, deadline=now - DAY)

    page = dashboard(client, assignee)

    assert '<p class="metric" id="flow-score">50</p>' in page
    assert '<p class="flow-parts" id="flow-parts">2 of 4 kept, 1 completed late, 1 overdue</p>' in (
        page
    )


def test_the_parts_are_one_query_and_agree_with_the_score(
    assigner, assignee, django_assert_num_queries
):
    kept(assigner, assignee, at=NOW - DAY)
    late(assigner, assignee, deadline=NOW - 2 * DAY)

    with django_assert_num_queries(1):
        parts = selectors.flow_score_parts(user=assignee, now=NOW)

    assert (parts.kept, parts.completed, parts.overdue, parts.late) == (1, 1, 1, 0)
    assert parts.counted == 2 and parts.score == 50
    assert selectors.flow_score(user=assignee, now=NOW) == 50


# --- the history and its chart -----------------------------------------------------------


def test_the_history_is_the_score_as_it_stood_each_day(assigner, assignee):
    kept(assigner, assignee, at=NOW - 10 * DAY)
    # Active, its deadline passed 3 days ago: overdue from then on.
    late(assigner, assignee, deadline=NOW - 3 * DAY)
    # Completed 6 days ago, 2 days after its deadline: overdue for those 2 days.
    late(assigner, assignee, deadline=NOW - 8 * DAY, completed_at=NOW - 6 * DAY)

    points = flow_score_history(user=assignee, tz=dt.UTC, now=NOW)

    assert len(points) == 90 and points[-1].day == NOW.date()
    by_age = {(NOW.date() - p.day).days: p for p in points}
    assert all(by_age[age].score is None for age in range(11, 90))
    assert by_age[10].score == 100 and (by_age[10].kept, by_age[10].moves) == (1, 1)
    assert by_age[9].score == 100
    assert by_age[8].score == 50 and by_age[8].overdue == 1  # went overdue that day
    assert by_age[7].score == 50
    assert by_age[6].score == 50 and by_age[6].late == 1  # completed late
    assert by_age[3].score == 33 and by_age[3].overdue == 1
    assert by_age[0].score == selectors.flow_score(user=assignee, now=NOW) == 33
    assert sum(p.moves for p in points) == 4


def test_accepted_after_its_deadline_it_is_overdue_from_the_acceptance(assigner, assignee):
    make(
        assigner,
        assignee,
        Status.ACTIVE,
        deadline=NOW - 5 * DAY,
        activated_at=NOW - 2 * DAY,
    )

    by_age = {
        (NOW.date() - p.day).days: p for p in flow_score_history(user=assignee, tz=dt.UTC, now=NOW)
    }

    assert by_age[3].score is None
    assert by_age[2].score == 0 and by_age[2].overdue == 1


def test_days_are_the_viewers_days(assigner, assignee):
    # 23:30 UTC on the 17th is already the 18th in Tokyo.
    kept(assigner, assignee, at=dt.datetime(2026, 11, 17, 23, 30, tzinfo=dt.UTC))
    tokyo = dt.timezone(dt.timedelta(hours=9))

    utc_days = [p.day for p in flow_score_history(user=assignee, tz=dt.UTC, now=NOW) if p.moves]
    tokyo_days = [p.day for p in flow_score_history(user=assignee, tz=tokyo, now=NOW) if p.moves]

    assert utc_days == [dt.date(2026, 11, 17)]
    assert tokyo_days == [dt.date(2026, 11, 18)]


def test_the_chart_is_an_accessible_svg_whose_points_link_to_their_day(client, assigner, assignee):
    now = timezone.now()
    k = kept(assigner, assignee, at=now - 10 * DAY, description="Kept ten days ago")
    overdue = late(assigner, assignee, deadline=now - 3 * DAY, description="Overdue three days")

    page = dashboard(client, assignee)

    svg = re.search(r"<svg .*?</svg>", page, re.S).group(0)
    assert 'role="group"' in svg and 'aria-labelledby="flow-chart-title flow-chart-desc"' in svg
    assert '<title id="flow-chart-title">Your Flow Score, last 90 days</title>' in svg
    desc = re.search(r'<desc id="flow-chart-desc">(.*?)</desc>', svg, re.S).group(1)
    assert "is 50 today" in desc and "2 days had changes" in desc
    links = re.findall(r'<a href="(/dashboard/day/[0-9-]+/)" aria-label="([^"]+)"', svg)
    days = [(now - 10 * DAY).date().isoformat(), (now - 3 * DAY).date().isoformat()]
    assert [url for url, _ in links] == [f"/dashboard/day/{d}/" for d in days]
    assert "Flow Score 100; 1 kept." in links[0][1]
    assert "Flow Score 50; 1 overdue." in links[1][1]
    assert "<script" not in svg and "polyline" in svg

    day = client.get(links[0][0]).content.decode()
    assert k.description in day and overdue.description not in day
    assert "completed by the deadline" in day
    day = client.get(links[1][0]).content.decode()
    assert overdue.description in day and "the deadline passed" in day


def test_no_score_no_chart(client, assigner, assignee):
    commitment_in(Status.ACTIVE, assigner, assignee)

    page = dashboard(client, assignee)

    assert "No score yet" in page and "<svg" not in page


def test_the_day_page_shows_only_the_persons_own(client, assigner, assignee, outsider):
    k = kept(assigner, assignee, at=NOW)

    moves = flow_score_day_moves(user=outsider, day=NOW.date(), tz=dt.UTC)
    assert moves == []
    (move,) = flow_score_day_moves(user=assignee, day=NOW.date(), tz=dt.UTC)
    assert (move.commitment, move.kind) == (k, "kept")
    client.force_login(outsider)
    page = client.get(f"/dashboard/day/{NOW.date().isoformat()}/").content.decode()
    assert "Nothing moved your score that day." in page
    assert client.get("/dashboard/day/not-a-day/").status_code == 404


# --- by role -----------------------------------------------------------------------------


def test_someone_who_never_asked_sees_no_asked_section(client, assigner, assignee):
    commitment_in(Status.ACTIVE, assigner, assignee)

    page = dashboard(client, assignee)

    assert "What you asked of others" not in page
    assert "You asked" not in page


def test_the_asked_list_is_paginated_and_filtered(client, assigner, assignee):
    for n in range(30):
        commitment_in(Status.PENDING_HANDSHAKE if n % 3 else Status.REFUSED, assigner, assignee)

    page = dashboard(client, assigner)
    asked = page[page.index('id="asked"') :]
    assert asked.count("<tr>") == 1 + 25
    assert 'href="?page=2#asked" rel="next"' in asked and "Page 1 of 2" in asked

    page = dashboard(client, assigner, "?page=2")
    assert page[page.index('id="asked"') :].count("<tr>") == 1 + 5

    page = dashboard(client, assigner, "?status=Refused")
    asked = page[page.index('id="asked"') :]
    assert asked.count("<tr>") == 1 + 10
    assert asked.count('<span class="badge status-refused">Declined</span>') == 10
    assert 'aria-current="true" class="button small primary">Declined</a>' in asked

    page = dashboard(client, assigner, "?status=nonsense")  # an unknown filter: all
    assert "Page 1 of 2" in page


# --- queries -----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [10, 1000])
@pytest.mark.parametrize("role", ["assigner", "assignee"])
def test_the_dashboard_costs_the_same_queries_at_10_and_1000_commitments(
    client, assigner, assignee, django_assert_num_queries, n, role
):
    many_commitments(assigner, assignee, n)
    user = {"assigner": assigner, "assignee": assignee}[role]
    client.force_login(user)
    page = client.get("/dashboard/").content.decode()
    # Every section is there, at both sizes.
    for section in ("Overdue, yours to do", "Declined: renegotiate", "Drafts to send", "<svg"):
        assert section in page
    assert ("Page 1 of" in page) == (n == 1000)

    # session, user, counts, score parts, history, four attention lists,
    # the asked page and its count
    # + the navigation's count of requests waiting (commitments.context_processors)
    with django_assert_num_queries(12):
        response = client.get("/dashboard/?page=2")

    assert response.status_code == 200


@pytest.mark.parametrize("n", [10, 1000])
def test_the_day_page_costs_the_same_queries_at_10_and_1000_commitments(
    client, assigner, assignee, django_assert_num_queries, n
):
    many_commitments(assigner, assignee, n)
    client.force_login(assignee)
    day = (timezone.now() - 3 * DAY).date().isoformat()  # "Bulk 3" was completed then

    # session, user, the day's commitments, the navigation's count
    with django_assert_num_queries(4):
        response = client.get(f"/dashboard/day/{day}/")

    assert response.status_code == 200
    assert "Bulk" in response.content.decode()
