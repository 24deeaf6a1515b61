"""The dashboard (/dashboard/): what needs the person's attention first, their
Flow Score with its parts and its last 90 days as a server-side SVG chart, and
what they asked of others; and the page behind each point of the chart
(/dashboard/day/<date>/): what moved the score that day.

Each section shows only for a role the person has: someone who never asked
anything sees no "You asked" section; someone never asked anything sees their
score's empty state, not an empty chart. docs/pages.md, "The dashboard".
"""

from __future__ import annotations

import datetime as dt

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.views.decorators.http import require_safe

from accounts.requests import AuthenticatedRequest
from commitments import selectors, selectors_dashboard
from commitments.models import Status
from commitments.selectors_dashboard import DayPoint

ASKED_PER_PAGE = 25
MOVES_PER_PAGE = 50

# The chart's drawing area, in SVG units (it scales to the page's width).
CHART_WIDTH = 720
CHART_HEIGHT = 200
CHART_LEFT = 36
CHART_RIGHT = 12
CHART_TOP = 12
CHART_BOTTOM = 28

# The filters of "What you asked of others", as the page words them.
ASKED_FILTER_WORDS = {
    "": "All",
    Status.DRAFT.value: "Drafts",
    Status.PENDING_HANDSHAKE.value: "Pending handshake",
    Status.ACTIVE.value: "Active",
    "overdue": "Overdue",
    Status.COMPLETED.value: "Completed",
    Status.REFUSED.value: Status.REFUSED.label,
    Status.WITHDRAWN.value: Status.WITHDRAWN.label,
}


def _moves_words(point: DayPoint) -> str:
    parts = []
    if point.kept:
        parts.append(f"{point.kept} kept")
    if point.late:
        parts.append(f"{point.late} completed late")
    if point.overdue:
        parts.append(f"{point.overdue} overdue")
    return ", ".join(parts)


def flow_chart(points: list[DayPoint]) -> dict | None:
    """Where to draw each day of `flow_score_history` (None: nothing to draw):
    the line through the days that have a score, and a linked dot for each day
    something moved the score."""
    scored = [p for p in points if p.score is not None]
    if not scored:
        return None
    plot_w = CHART_WIDTH - CHART_LEFT - CHART_RIGHT
    plot_h = CHART_HEIGHT - CHART_TOP - CHART_BOTTOM
    step = plot_w / max(len(points) - 1, 1)
    for n, point in enumerate(points):
        point.x = round(CHART_LEFT + n * step, 1)
        if point.score is not None:
            point.y = round(CHART_TOP + (100 - point.score) * plot_h / 100, 1)
    # The line breaks where a day has no score (nothing counted in its 90 days).
    runs: list[list[DayPoint]] = [[]]
    for point in points:
        if point.score is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append(point)
    lines = [" ".join(f"{p.x},{p.y}" for p in run) for run in runs if len(run) > 1]
    lone = [run[0] for run in runs if len(run) == 1 and run[0].moves == 0]
    dots = [
        {
            "point": p,
            "url": reverse("dashboard_day", args=[p.day.isoformat()]),
            "label": (
                f"{date_format(p.day, 'j M')}: Flow Score {p.score}; {_moves_words(p)}. "
                "Show these commitments."
            ),
        }
        for p in points
        if p.moves
    ]
    low = min(scored, key=lambda p: (p.score, p.day))
    high = max(scored, key=lambda p: (p.score, -p.day.toordinal()))
    first, last = scored[0], scored[-1]

    def day(p: DayPoint) -> str:
        return date_format(p.day, "j M")

    desc = (
        f"Your Flow Score at the end of each day from {day(points[0])} to today. "
        f"It was {first.score} on {day(first)} and is {last.score} today; "
        f"lowest {low.score} on {day(low)}, highest {high.score} on {day(high)}. "
        f"{len(dots)} days had changes; each is a link to the commitments that moved it."
    )
    grid = [{"score": s, "y": round(CHART_TOP + (100 - s) * plot_h / 100, 1)} for s in (0, 50, 100)]
    return {
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "left": CHART_LEFT,
        "right": CHART_WIDTH - CHART_RIGHT,
        "label_y": CHART_HEIGHT - 8,
        "first_day": points[0],
        "last_day": points[-1],
        "grid": grid,
        "lines": lines,
        "lone": lone,
        "dots": dots,
        "desc": desc,
    }


@login_required
def dashboard(request: AuthenticatedRequest) -> HttpResponse:
    user = request.user
    now = timezone.now()
    counts = selectors_dashboard.dashboard_counts(user=user, now=now)
    parts = selectors.flow_score_parts(user=user, now=now)
    chart = None
    if counts.owed:
        history = selectors_dashboard.flow_score_history(
            user=user, tz=timezone.get_current_timezone(), now=now
        )
        chart = flow_chart(history)
    # Each list is read only when its count says it has rows.
    attention = {
        # Proposals and requests for more time waiting for the person's answer.
        "answers": (
            selectors.proposals_waiting_for(user=user, limit=selectors_dashboard.ATTENTION_ROWS)
            if counts.answers
            else []
        ),
        "declined": selectors_dashboard.attention_declined(user=user) if counts.declined else [],
        "overdue_owed": (
            selectors_dashboard.attention_overdue_owed(user=user, now=now)
            if counts.overdue_owed
            else []
        ),
        "overdue_asked": (
            selectors_dashboard.attention_overdue_asked(user=user, now=now)
            if counts.overdue_asked
            else []
        ),
        "drafts": selectors_dashboard.attention_drafts(user=user) if counts.drafts else [],
    }
    asked_filter = request.GET.get("status", "")
    if asked_filter not in ASKED_FILTER_WORDS:
        asked_filter = ""
    asked_page = None
    if counts.asked:
        condition = selectors_dashboard.asked_filter(asked_filter, now) if asked_filter else None
        paginator = Paginator(
            selectors_dashboard.asked_list(user=user, condition=condition), ASKED_PER_PAGE
        )
        asked_page = paginator.get_page(request.GET.get("page"))
    return render(
        request,
        "commitments/dashboard.html",
        {
            "counts": counts,
            "flow": parts,
            "chart": chart,
            "attention": attention,
            "attention_any": any(attention.values()),
            "asked_page": asked_page,
            "asked_filter": asked_filter,
            "asked_filters": ASKED_FILTER_WORDS,
        },
    )


@require_safe
@login_required
def dashboard_day(request: AuthenticatedRequest, day: str) -> HttpResponse:
    """What moved the Flow Score on one day: the chart's points link here."""
    try:
        date = dt.date.fromisoformat(day)
    except ValueError:
        raise Http404("No such day.") from None
    moves = selectors_dashboard.flow_score_day_moves(
        user=request.user, day=date, tz=timezone.get_current_timezone()
    )
    page = Paginator(moves, MOVES_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "commitments/dashboard_day.html",
        {"day": date, "page": page, "moves": page.object_list},
    )
