"""Accepting something already past its deadline says it will count as
overdue (issue 15, point 3): a warning next to Accept, from the include
`commitments/_overdue_accept_warning.html` that every page offering Accept
uses; the accept action itself is unchanged."""

from __future__ import annotations

import datetime as dt

import pytest
from django.template.loader import render_to_string
from django.utils import timezone

from commitments.models import Status
from tests.harness.commitments import commitment_in

pytestmark = pytest.mark.django_db

WARNING = "Accepting now counts it as overdue at once"


def past() -> dt.datetime:
    return timezone.now() - dt.timedelta(hours=3)


def test_accepting_a_request_past_its_deadline_warns_next_to_the_accept_button(
    client, assigner, assignee
):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee, deadline=past())
    client.force_login(assignee)
    html = client.get(f"/commitments/{c.pk}").content.decode()
    assert WARNING in html
    # The button names the warning for screen readers.
    assert f'aria-describedby="accept-warning-{c.pk}"' in html
    assert f'id="accept-warning-{c.pk}"' in html
    # The server action is unchanged: it accepts, and it counts as overdue.
    client.post(f"/commitments/{c.pk}/accept", {"terms_version": c.terms_version})
    c.refresh_from_db()
    assert c.status == Status.ACTIVE


def test_no_warning_before_the_deadline_or_without_one(client, assigner, assignee):
    client.force_login(assignee)
    future = timezone.now() + dt.timedelta(days=1)
    for deadline in (future, None):
        c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee, deadline=deadline)
        html = client.get(f"/commitments/{c.pk}").content.decode()
        assert "Accept" in html
        assert WARNING not in html
        assert 'aria-describedby="accept-warning' not in html


@pytest.mark.parametrize("status", [Status.DRAFT, Status.ACTIVE, Status.REFUSED])
def test_the_include_says_nothing_where_there_is_nothing_to_accept(assigner, assignee, status):
    c = commitment_in(status, assigner, assignee, deadline=past())
    html = render_to_string("commitments/_overdue_accept_warning.html", {"commitment": c})
    assert html.strip() == ""


def test_the_include_works_in_any_list_with_its_own_variable(assigner, assignee):
    c = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee, deadline=past())
    template = (
        '{% for c in items %}{% include "commitments/_overdue_accept_warning.html" '
        "with commitment=c %}{% endfor %}"
    )
    from django.template import engines

    html = engines["django"].from_string(template).render({"items": [c]})
    assert WARNING in html


def test_the_accord_warns_next_to_accept_on_a_request_past_its_deadline(client, assigner, assignee):
    late = commitment_in(Status.PENDING_HANDSHAKE, assigner, assignee, deadline=past())
    on_time = commitment_in(
        Status.PENDING_HANDSHAKE,
        assigner,
        assignee,
        deadline=timezone.now() + dt.timedelta(days=2),
    )
    client.force_login(assignee)

    html = client.get("/").content.decode()

    assert html.count(WARNING) == 1
    assert f'aria-describedby="accept-warning-{late.pk}"' in html
    assert f'id="accept-warning-{late.pk}"' in html
    assert f"accept-warning-{on_time.pk}" not in html
