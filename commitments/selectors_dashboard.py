"""Reads for the dashboard: what needs the person's attention, what they
asked of others, and the Flow Score's last 90 days, day by day.

Every function here is a fixed number of queries, whatever the number of
commitments (tests/commitments/test_dashboard.py asserts it at 10 and 1,000).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from commitments.models import Commitment, Status, overdue
from commitments.selectors import FLOW_SCORE_WINDOW, _for_pages

HISTORY_DAYS = 90
# How many rows each "Needs your attention" list shows; the rest are a link away.
ATTENTION_ROWS = 5


def asked_filter(name: str, now: dt.datetime) -> Q | None:
    """The condition of a filter of "What you asked of others" by name: a
    status (its API value) or "overdue"; None for any other name."""
    if name == "overdue":
        return overdue(now)
    if name in Status.values:
        return Q(status=name)
    return None


@dataclass(frozen=True)
class DashboardCounts:
    asked: int  # everything the person asked, drafts included
    owed: int  # everything asked of the person (drafts excluded)
    drafts: int
    declined: int
    overdue_owed: int  # the person's own, past their deadline
    overdue_asked: int  # asked of someone else, past its deadline


def dashboard_counts(*, user, now: dt.datetime) -> DashboardCounts:
    """Every count the dashboard shows, in one query."""
    mine = Q(assigner=user)
    theirs = Q(assignee=user)
    totals = Commitment.objects.filter(mine | theirs).aggregate(
        asked=Count("pk", filter=mine),
        owed=Count("pk", filter=theirs & ~Q(status=Status.DRAFT)),
        drafts=Count("pk", filter=mine & Q(status=Status.DRAFT)),
        declined=Count("pk", filter=mine & Q(status=Status.REFUSED)),
        overdue_owed=Count("pk", filter=theirs & overdue(now)),
        overdue_asked=Count("pk", filter=mine & ~theirs & overdue(now)),
    )
    return DashboardCounts(**totals)


def attention_declined(*, user) -> list[Commitment]:
    """What the person asked and was declined: to renegotiate (or let go).
    The most recently declined first; at most ATTENTION_ROWS."""
    rows = _for_pages().filter(assigner=user, status=Status.REFUSED)
    return list(rows.order_by("-refused_at")[:ATTENTION_ROWS])


def attention_overdue_owed(*, user, now: dt.datetime) -> list[Commitment]:
    """The person's own commitments past their deadline, the oldest deadline first."""
    rows = _for_pages().filter(overdue(now), assignee=user)
    return list(rows.order_by("deadline")[:ATTENTION_ROWS])


def attention_overdue_asked(*, user, now: dt.datetime) -> list[Commitment]:
    """What the person asked of others that is past its deadline."""
    rows = _for_pages().filter(overdue(now), assigner=user).exclude(assignee=user)
    return list(rows.order_by("deadline")[:ATTENTION_ROWS])


def attention_drafts(*, user) -> list[Commitment]:
    """Drafts to send, the newest first."""
    rows = _for_pages().filter(assigner=user, status=Status.DRAFT)
    return list(rows.order_by("-created_at")[:ATTENTION_ROWS])


def asked_list(*, user, condition: Q | None = None) -> QuerySet[Commitment]:
    """What the person asked of others (drafts included), the newest first;
    a page of it is one query (plus one count)."""
    rows = _for_pages().filter(assigner=user)
    if condition is not None:
        rows = rows.filter(condition)
    return rows.order_by("-created_at", "-pk")


# --- the Flow Score, day by day -------------------------------------------------------


@dataclass(frozen=True)
class _Scored:
    """What the Flow Score needs of one commitment that was once accepted."""

    id: object
    deadline: dt.datetime | None
    activated_at: dt.datetime
    completed_at: dt.datetime | None

    @property
    def overdue_from(self) -> dt.datetime | None:
        """When it became overdue (Active past its deadline): the deadline, or
        the acceptance when it was accepted after the deadline; None if never."""
        if self.deadline is None:
            return None
        start = max(self.deadline, self.activated_at)
        if self.completed_at is not None and self.completed_at <= start:
            return None
        return start

    def kept(self) -> bool:
        return self.completed_at is not None and (
            self.deadline is None or self.completed_at <= self.deadline
        )


@dataclass
class DayPoint:
    """The Flow Score at the end of one day (now, for today) and what moved
    it that day: commitments completed on time or late, or gone overdue."""

    day: dt.date
    score: int | None
    kept: int = 0
    late: int = 0
    overdue: int = 0
    # Set by the chart: where the point is drawn.
    x: float = 0.0
    y: float = 0.0

    @property
    def moves(self) -> int:
        return self.kept + self.late + self.overdue


def _day_bounds(day: dt.date, tz: dt.tzinfo) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime.combine(day, dt.time.min, tzinfo=tz)
    end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time.min, tzinfo=tz)
    return start, end


def _scored_rows(*, user, since: dt.datetime, until: dt.datetime) -> list[_Scored]:
    """The person's accepted commitments that can count between `since` and
    `until`: completed since, or with a deadline in between. One query."""
    rows = (
        Commitment.objects.filter(assignee=user, activated_at__isnull=False)
        .filter(Q(completed_at__gte=since) | Q(deadline__gte=since, deadline__lt=until))
        .values_list("id", "deadline", "activated_at", "completed_at")
    )
    return [_Scored(*row) for row in rows]


def _score_at(rows: list[_Scored], at: dt.datetime) -> int | None:
    """The Flow Score as it stood at `at`: the definition of
    `selectors.flow_score_parts`, applied to the past (completion is final,
    and the deadline no longer changes once a commitment is accepted)."""
    since = at - FLOW_SCORE_WINDOW
    kept = completed = late_now = 0
    for row in rows:
        if row.completed_at is not None and since <= row.completed_at <= at:
            completed += 1
            kept += row.kept()
        start = row.overdue_from
        if (
            start is not None
            and start < at
            and row.deadline >= since
            and (row.completed_at is None or row.completed_at > at)
        ):
            late_now += 1
    counted = completed + late_now
    return round(100 * kept / counted) if counted else None


def flow_score_history(
    *, user, tz: dt.tzinfo, now: dt.datetime | None = None, days: int = HISTORY_DAYS
) -> list[DayPoint]:
    """The Flow Score at the end of each of the last `days` days in the
    viewer's time zone `tz` (today: now), with what moved it each day. One
    query; the last point equals `flow_score_parts(...).score`."""
    now = now or timezone.now()
    today = timezone.localtime(now, tz).date()
    first = today - dt.timedelta(days=days - 1)
    first_start, _ = _day_bounds(first, tz)
    rows = _scored_rows(user=user, since=first_start - FLOW_SCORE_WINDOW, until=now)
    points = []
    for n in range(days):
        day = first + dt.timedelta(days=n)
        start, end = _day_bounds(day, tz)
        end = min(end, now)
        point = DayPoint(day=day, score=_score_at(rows, end))
        for row in rows:
            if row.completed_at is not None and start <= row.completed_at < end:
                if row.kept():
                    point.kept += 1
                else:
                    point.late += 1
            became = row.overdue_from
            if became is not None and start <= became < end:
                point.overdue += 1
        points.append(point)
    return points


@dataclass(frozen=True)
class DayMove:
    commitment: Commitment
    kind: str  # "kept", "late" or "overdue"


def flow_score_day_moves(*, user, day: dt.date, tz: dt.tzinfo) -> list[DayMove]:
    """What moved the person's Flow Score on `day` (in `tz`): commitments
    completed that day (kept or late), and those that went overdue that day.
    One query."""
    start, end = _day_bounds(day, tz)
    rows = (
        _for_pages()
        .filter(assignee=user, activated_at__isnull=False)
        .filter(
            Q(completed_at__gte=start, completed_at__lt=end)
            | (
                Q(deadline__lt=end, activated_at__lt=end)
                & (Q(deadline__gte=start) | Q(activated_at__gte=start))
            )
        )
        .order_by("deadline", "pk")
    )
    moves = []
    for c in rows:
        scored = _Scored(c.pk, c.deadline, c.activated_at, c.completed_at)
        if c.completed_at is not None and start <= c.completed_at < end:
            moves.append(DayMove(c, "kept" if scored.kept() else "late"))
        became = scored.overdue_from
        if became is not None and start <= became < end:
            moves.append(DayMove(c, "overdue"))
    return moves
