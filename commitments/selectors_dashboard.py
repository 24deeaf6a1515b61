"""Reads for the dashboard: what needs the person's attention, what they
asked of others, and the Flow Score's last 90 days, day by day.

Every function here is a fixed number of queries, whatever the number of
commitments (tests/commitments/test_dashboard.py asserts it at 10 and 1,000).
"""

from __future__ import annotations

import datetime as dt
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from audit.models import AuditAction, AuditEvent
from commitments.models import Commitment, Proposal, ProposalState, Status, overdue
from commitments.selectors import FLOW_SCORE_WINDOW, _for_pages

if TYPE_CHECKING:
    from accounts.models import User

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
    # what the person asked, with a proposal or a request for more time
    # waiting for their answer
    answers: int = 0


def dashboard_counts(*, user: User, now: dt.datetime) -> DashboardCounts:
    """Every count the dashboard shows, in one query."""
    mine = Q(assigner=user)
    theirs = Q(assignee=user)
    open_proposal = Exists(
        Proposal.objects.filter(commitment=OuterRef("pk"), state=ProposalState.OPEN)
    )
    totals = Commitment.objects.filter(mine | theirs).aggregate(
        asked=Count("pk", filter=mine),
        owed=Count("pk", filter=theirs & ~Q(status=Status.DRAFT)),
        drafts=Count("pk", filter=mine & Q(status=Status.DRAFT)),
        declined=Count("pk", filter=mine & Q(status=Status.REFUSED)),
        overdue_owed=Count("pk", filter=theirs & overdue(now)),
        overdue_asked=Count("pk", filter=mine & ~theirs & overdue(now)),
        answers=Count(
            "pk",
            filter=mine
            & Q(status__in=[Status.PENDING_HANDSHAKE, Status.ACTIVE])
            & Q(open_proposal),
        ),
    )
    return DashboardCounts(**totals)


def attention_declined(*, user: User) -> list[Commitment]:
    """What the person asked and was declined: to renegotiate (or let go).
    The most recently declined first; at most ATTENTION_ROWS. Each carries
    `decline_reason`, the reason given with its latest decline ('' or None
    without one), from its audit row, in the same query."""
    latest_decline = AuditEvent.objects.filter(
        subject_type__app_label="commitments",
        subject_type__model="commitment",
        subject_id=OuterRef("pk"),
        action=AuditAction.DECLINED,
    ).order_by("-occurred_at", "-pk")
    rows = (
        _for_pages()
        .filter(assigner=user, status=Status.REFUSED)
        .annotate(decline_reason=Subquery(latest_decline.values("payload__reason")[:1]))
    )
    return list(rows.order_by("-refused_at")[:ATTENTION_ROWS])


def attention_overdue_owed(*, user: User, now: dt.datetime) -> list[Commitment]:
    """The person's own commitments past their deadline, the oldest deadline first."""
    rows = _for_pages().filter(overdue(now), assignee=user)
    return list(rows.order_by("deadline")[:ATTENTION_ROWS])


def attention_overdue_asked(*, user: User, now: dt.datetime) -> list[Commitment]:
    """What the person asked of others that is past its deadline."""
    rows = _for_pages().filter(overdue(now), assigner=user).exclude(assignee=user)
    return list(rows.order_by("deadline")[:ATTENTION_ROWS])


def attention_drafts(*, user: User) -> list[Commitment]:
    """Drafts to send, the newest first."""
    rows = _for_pages().filter(assigner=user, status=Status.DRAFT)
    return list(rows.order_by("-created_at")[:ATTENTION_ROWS])


def asked_list(*, user: User, condition: Q | None = None) -> QuerySet[Commitment]:
    """What the person asked of others (drafts included), the newest first;
    a page of it is one query (plus one count)."""
    rows = _for_pages().filter(assigner=user)
    if condition is not None:
        rows = rows.filter(condition)
    return rows.order_by("-created_at", "-pk")


# --- the Flow Score, day by day -------------------------------------------------------


class _Scored:
    """What the Flow Score needs of one commitment that was once accepted,
    worked out once: whether it was kept, and when it became overdue."""

    __slots__ = ("completed_at", "deadline", "kept", "overdue_from")

    def __init__(
        self,
        deadline: dt.datetime | None,
        activated_at: dt.datetime | None,
        completed_at: dt.datetime | None,
    ) -> None:
        # Its queries take accepted commitments only (activated_at__isnull=False).
        assert activated_at is not None
        self.deadline = deadline
        self.completed_at = completed_at
        self.kept = completed_at is not None and (deadline is None or completed_at <= deadline)
        # When it became overdue (Active past its deadline): the deadline, or
        # the acceptance when it was accepted after the deadline; None if never.
        self.overdue_from: dt.datetime | None = None
        if deadline is not None:
            start = max(deadline, activated_at)
            if completed_at is None or completed_at > start:
                self.overdue_from = start


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


def _scored_rows(*, user: User, since: dt.datetime, until: dt.datetime) -> list[_Scored]:
    """The person's accepted commitments that can count between `since` and
    `until`: completed since, or with a deadline in between. One query."""
    rows = (
        Commitment.objects.filter(assignee=user, activated_at__isnull=False)
        .exclude(status=Status.WITHDRAWN)
        .filter(Q(completed_at__gte=since) | Q(deadline__gte=since, deadline__lt=until))
        .values_list("deadline", "activated_at", "completed_at")
    )
    return [_Scored(*row) for row in rows]


class _History:
    """The Flow Score at any past moment, from the rows of `_scored_rows`:
    the definition of `selectors.flow_score_parts` applied to the past
    (completion is final; a commitment counts against the deadline both
    agreed last, so more time granted moves its past too, as it does the
    score now; a withdrawn one never counts). Completions are counted by
    bisection; the rows that were ever overdue are few, and walked."""

    def __init__(self, rows: list[_Scored]) -> None:
        self.completed = sorted(r.completed_at for r in rows if r.completed_at is not None)
        self.kept = sorted(r.completed_at for r in rows if r.kept and r.completed_at is not None)
        # An overdue row has a deadline (overdue_from is set only then).
        self.overdue = [
            (r.overdue_from, r.deadline, r.completed_at)
            for r in rows
            if r.overdue_from is not None and r.deadline is not None
        ]

    def score_at(self, at: dt.datetime) -> int | None:
        since = at - FLOW_SCORE_WINDOW
        completed = bisect_right(self.completed, at) - bisect_left(self.completed, since)
        kept = bisect_right(self.kept, at) - bisect_left(self.kept, since)
        overdue = sum(
            1
            for start, deadline, done in self.overdue
            if start < at and deadline >= since and (done is None or done > at)
        )
        counted = completed + overdue
        return round(100 * kept / counted) if counted else None


def flow_score_history(
    *, user: User, tz: dt.tzinfo, now: dt.datetime | None = None, days: int = HISTORY_DAYS
) -> list[DayPoint]:
    """The Flow Score at the end of each of the last `days` days in the
    viewer's time zone `tz` (today: now), with what moved it each day. One
    query; the last point equals `flow_score_parts(...).score`."""
    now = now or timezone.now()
    today = timezone.localtime(now, tz).date()
    first = today - dt.timedelta(days=days - 1)
    dates = [first + dt.timedelta(days=n) for n in range(days)]
    starts = [_day_bounds(day, tz)[0] for day in dates]
    rows = _scored_rows(user=user, since=starts[0] - FLOW_SCORE_WINDOW, until=now)
    history = _History(rows)
    ends = [*starts[1:], now]
    points = [
        DayPoint(day=day, score=history.score_at(min(end, now)))
        for day, end in zip(dates, ends, strict=True)
    ]

    def day_of(moment: dt.datetime | None) -> DayPoint | None:
        if moment is None or moment < starts[0] or moment >= now:
            return None
        return points[bisect_right(starts, moment) - 1]

    for row in rows:
        point = day_of(row.completed_at)
        if point is not None:
            if row.kept:
                point.kept += 1
            else:
                point.late += 1
        point = day_of(row.overdue_from)
        if point is not None:
            point.overdue += 1
    return points


@dataclass(frozen=True)
class DayMove:
    commitment: Commitment
    kind: str  # "kept", "late" or "overdue"


def flow_score_day_moves(*, user: User, day: dt.date, tz: dt.tzinfo) -> list[DayMove]:
    """What moved the person's Flow Score on `day` (in `tz`): commitments
    completed that day (kept or late), and those that went overdue that day.
    One query."""
    start, end = _day_bounds(day, tz)
    rows = (
        _for_pages()
        .filter(assignee=user, activated_at__isnull=False)
        .exclude(status=Status.WITHDRAWN)
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
        scored = _Scored(c.deadline, c.activated_at, c.completed_at)
        if c.completed_at is not None and start <= c.completed_at < end:
            moves.append(DayMove(c, "kept" if scored.kept else "late"))
        became = scored.overdue_from
        if became is not None and start <= became < end:
            moves.append(DayMove(c, "overdue"))
    return moves
