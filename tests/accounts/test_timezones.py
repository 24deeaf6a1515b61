"""One rule for a user's time zone (accounts.timezones): the zone on their
profile, or UTC when it is empty or unknown, used by the pages (the
middleware), nudges, token expiry and capture."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from django.test import RequestFactory
from django.utils import timezone

from accounts.middleware import UserTimezoneMiddleware
from accounts.models import User
from accounts.timezones import user_now, user_zone, zone_named

BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")


def test_a_known_zone_is_that_zone():
    assert zone_named("Europe/Berlin").key == "Europe/Berlin"
    assert zone_named("America/Argentina/Buenos_Aires").key == "America/Argentina/Buenos_Aires"


@pytest.mark.parametrize(
    "name",
    [
        "",  # never chosen
        None,
        "Mars/Olympus_Mons",  # no such zone
        "America",  # a folder of zones, not a zone
        "europe/berlin",  # keys are case-sensitive
        "UTC ",
        "../etc/passwd",  # ZoneInfo refuses paths with ValueError, not NotFound
        "/etc/localtime",
        42,
    ],
)
def test_an_empty_or_unknown_zone_falls_back_to_utc(name):
    assert zone_named(name).key == "UTC"


def test_a_user_without_the_attribute_is_on_utc():
    assert user_zone(object()).key == "UTC"


def test_the_users_clock_follows_summer_time():
    user = User(email="a@example.com", timezone="Europe/Berlin")
    # Berlin moves from CET (+1) to CEST (+2) at 01:00 UTC on 29 March 2026.
    before = user_now(user, now=dt.datetime(2026, 3, 29, 0, 59, tzinfo=dt.UTC))
    after = user_now(user, now=dt.datetime(2026, 3, 29, 1, 0, tzinfo=dt.UTC))
    assert (before.hour, before.minute, before.utcoffset()) == (1, 59, dt.timedelta(hours=1))
    assert (after.hour, after.minute, after.utcoffset()) == (3, 0, dt.timedelta(hours=2))
    # And back on 25 October: 02:30 happens twice, told apart by the offset.
    first = user_now(user, now=dt.datetime(2026, 10, 25, 0, 30, tzinfo=dt.UTC))
    second = user_now(user, now=dt.datetime(2026, 10, 25, 1, 30, tzinfo=dt.UTC))
    assert (first.hour, first.minute) == (second.hour, second.minute) == (2, 30)
    assert first.utcoffset() == dt.timedelta(hours=2)
    assert second.utcoffset() == dt.timedelta(hours=1)


def test_the_users_clock_without_a_moment_is_now():
    user = User(email="a@example.com", timezone="Asia/Tokyo")
    local = user_now(user)
    assert local.tzinfo == zoneinfo.ZoneInfo("Asia/Tokyo")
    assert abs(local - timezone.now()) < dt.timedelta(seconds=5)


def test_an_unknown_zone_reads_the_clock_in_utc():
    user = User(email="a@example.com", timezone="Mars/Olympus_Mons")
    moment = dt.datetime(2026, 7, 1, 12, 0, tzinfo=BERLIN)
    assert user_now(user, now=moment).utcoffset() == dt.timedelta(0)
    assert user_now(user, now=moment).hour == 10


def _zone_seen_by_a_page(user) -> str:
    seen = []

    def view(request):
        seen.append(timezone.get_current_timezone_name())
        return None

    request = RequestFactory().get("/")
    request.user = user
    try:
        UserTimezoneMiddleware(view)(request)
    finally:
        timezone.deactivate()
    return seen[0]


def test_pages_are_rendered_in_the_users_zone():
    assert _zone_seen_by_a_page(User(email="a@example.com", timezone="Asia/Kolkata")) == (
        "Asia/Kolkata"
    )


def test_pages_for_a_user_with_an_unknown_zone_are_in_utc():
    timezone.activate(BERLIN)  # left over from an earlier request on this thread
    try:
        user = User(email="a@example.com", timezone="Mars/Olympus_Mons")
        assert _zone_seen_by_a_page(user) == "UTC"
    finally:
        timezone.deactivate()


@pytest.mark.django_db
def test_a_signed_in_page_names_the_users_zone(client, make_user):
    user = make_user(timezone="Pacific/Auckland")
    client.force_login(user)
    response = client.get("/commitments/new")
    assert response.context["timezone_name"] == "Pacific/Auckland"
    # A zone that got past the validators (a row written by hand) falls back.
    User.objects.filter(pk=user.pk).update(timezone="Mars/Olympus_Mons")
    response = client.get("/commitments/new")
    assert response.context["timezone_name"] == "UTC"


def test_a_tokens_expiry_day_ends_at_midnight_on_the_users_clock_across_summer_time():
    from integrations.services import expiry_at_end_of

    # 29 March 2026 is 23 hours long in Berlin; it ends at 22:00 UTC on CEST.
    end = expiry_at_end_of(dt.date(2026, 3, 29), "Europe/Berlin")
    assert end.astimezone(dt.UTC) == dt.datetime(2026, 3, 29, 21, 59, 59, 999999, tzinfo=dt.UTC)
    # An unknown zone: the day ends at midnight UTC.
    end = expiry_at_end_of(dt.date(2026, 3, 29), "Mars/Olympus_Mons")
    assert end.astimezone(dt.UTC) == dt.datetime(2026, 3, 29, 23, 59, 59, 999999, tzinfo=dt.UTC)


def test_a_nudge_states_the_deadline_on_the_recipients_clock_or_utc():
    from notifications.nudges import format_deadline

    deadline = dt.datetime(2026, 10, 25, 1, 30, tzinfo=dt.UTC)
    assert format_deadline(deadline, "Europe/Berlin") == "Sun 25 Oct 2026, 02:30 (Europe/Berlin)"
    assert format_deadline(deadline, "") == "Sun 25 Oct 2026, 01:30 (UTC)"
    assert format_deadline(deadline, "Mars/Olympus_Mons") == "Sun 25 Oct 2026, 01:30 (UTC)"
