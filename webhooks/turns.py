"""Whose turn it is: one send per endpoint in flight at a time, and at most
WEBHOOK_USER_IN_FLIGHT per person across their endpoints, so a person's
receivers that hang hold that many webhook workers, never all of them. A
delivery whose endpoint or owner is busy waits without holding a worker and
is queued the moment a send of theirs ends (`next_in_line`)."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db.models import Count, Min, Q

from lib.db import InFirst, Prepared, Unindexed
from lib.deliveries import SEND_BATCH
from webhooks import dispatch
from webhooks.models import WebhookDelivery, WebhookDeliveryStatus, WebhookEndpoint


def busy(owner_id, endpoint_id, *, now: dt.datetime, besides) -> bool:
    """Another delivery to this endpoint is being sent, or the person has
    WEBHOOK_USER_IN_FLIGHT sends in flight already. Takes the person's turn
    lock first (their endpoints' rows, in one order), so two claims cannot
    both pass the count: call inside the claim's transaction."""
    lock(owner_id)
    sending = _in_flight(owner_id, now=now, besides=besides)
    return endpoint_id in sending or len(sending) >= settings.WEBHOOK_USER_IN_FLIGHT


def _in_flight(owner_id, *, now: dt.datetime, besides=None) -> list:
    """The endpoint ids of the person's sends in flight (live leases), one
    per endpoint: a batch that holds several of one endpoint's deliveries
    sends them one at a time (`sending.webhooks_send`)."""
    if besides is None:
        return list(set(_in_flight_of(owner_id, now)))
    return list(set(_in_flight_besides(owner_id, now, besides)))


def _theirs(**owners) -> InFirst:
    """A delivery to one of these people's endpoints (`user_id=` or
    `user_id__in=`), their ids read first (`lib.db.InFirst`): each read
    below visits their endpoints' rows alone, whatever waits for a retry
    elsewhere."""
    return InFirst("endpoint_id", WebhookEndpoint.objects.filter(**owners).values("pk"))


# Still to go: the rows of an endpoint's line (`webhook_endpoint_line_idx`).
_LINE = Q(status__in=[WebhookDeliveryStatus.PENDING, WebhookDeliveryStatus.SENDING])


def _in_line(condition: Q) -> Q:
    """`condition` (of rows still to go: `waiting`, a live send) for the
    reads by endpoint: the line's index takes them, the condition fenced
    (`lib.db.Unindexed`). Left open, the planner, whose statistics call
    pending rows few (they always are when the table is analysed), read
    every pending row of everyone's by the due index, or walked every
    endpoint's line, and filtered out the retries: thousands a call under
    one receiver's backlog (tests/webhooks/test_turn_plans.py)."""
    return _LINE & Q(Unindexed(condition))


def _live_sends(owner_id, now: dt.datetime):
    return WebhookDelivery.objects.filter(
        _theirs(user_id=owner_id), status=WebhookDeliveryStatus.SENDING, claimed_until__gt=now
    )


def _waiting_of(owner_id, now: dt.datetime):
    """The person's deliveries waiting for their turn (`waiting`)."""
    return WebhookDelivery.objects.filter(_in_line(waiting(now)), _theirs(user_id=owner_id))


# The reads of every claim and line, compiled once per shape (lib.db.Prepared).
_in_flight_of = Prepared(
    lambda owner_id, now: _live_sends(owner_id, now).values_list("endpoint_id", flat=True)
)
_in_flight_besides = Prepared(
    lambda owner_id, now, besides: (
        _live_sends(owner_id, now).exclude(pk=besides).values_list("endpoint_id", flat=True)
    )
)
_lock = Prepared(
    lambda owner_id: (
        WebhookEndpoint.objects.select_for_update()
        .filter(user_id=owner_id)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
)
_one_waiting = Prepared(
    lambda owner_id, now: _waiting_of(owner_id, now).order_by().values_list("pk", flat=True)[:1]
)
_line_of = Prepared(
    lambda owner_id, now: (
        _waiting_of(owner_id, now)
        .order_by("created_at", "pk")
        .values_list("pk", "endpoint_id")[:SEND_BATCH]
    )
)
_line_besides = Prepared(
    lambda owner_id, now, sending: (
        _waiting_of(owner_id, now)
        .exclude(endpoint_id__in=sending)
        .order_by("created_at", "pk")
        .values_list("pk", "endpoint_id")[:SEND_BATCH]
    )
)


def in_flight_of(owners: set, *, now: dt.datetime, besides: list) -> tuple[dict, dict]:
    """`busy`'s lock and read for a batch's owners at once: every owner's
    turn lock (all their endpoints' rows, in the one order of their ids),
    then, in one query, leaving out the batch's own rows, the endpoints each
    has in flight ({owner: {endpoint}}) and, for each of their endpoints,
    the `created_at` of its oldest delivery waiting for its turn
    ({endpoint: time}, as `older_waiting`). Call inside the claim's
    transaction."""
    list(
        WebhookEndpoint.objects.select_for_update()
        .filter(user_id__in=owners)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    live = Q(status=WebhookDeliveryStatus.SENDING, claimed_until__gt=now)
    flying: dict = {}
    older: dict = {}
    for owner_id, endpoint_id, sending, first in (
        WebhookDelivery.objects.filter(_in_line(live | waiting(now)), _theirs(user_id__in=owners))
        .exclude(pk__in=besides)
        .values("endpoint__user_id", "endpoint_id")
        .annotate(sending=Count("pk", filter=live), first=Min("created_at", filter=~live))
        .values_list("endpoint__user_id", "endpoint_id", "sending", "first")
    ):
        if sending:
            flying.setdefault(owner_id, set()).add(endpoint_id)
        if first is not None:
            older[endpoint_id] = first
    return flying, older


def waiting(now: dt.datetime) -> Q:
    """A delivery waiting for its turn: pending and due, or never tried (one
    left for its endpoint's or its owner's turn), or left `sending` by a
    dead worker (its lease ran out). Not one waiting for a retry."""
    due = Q(status=WebhookDeliveryStatus.PENDING) & (
        Q(next_attempt_at__lte=now) | Q(first_attempt_at__isnull=True)
    )
    return due | Q(status=WebhookDeliveryStatus.SENDING, claimed_until__lte=now)


def older_waiting(endpoint_ids: set, *, now: dt.datetime, besides: list) -> dict:
    """For each of these endpoints, the `created_at` of its oldest delivery
    waiting for its turn (`waiting`) other than `besides` (the claim's own):
    a claim leaves a delivery made after it waiting too, so each endpoint's
    line goes in the order it was made, whichever task is taken first. One
    query. Call inside the claim's transaction, after the turn lock."""
    return dict(
        WebhookDelivery.objects.filter(_in_line(waiting(now)), endpoint_id__in=endpoint_ids)
        .exclude(pk__in=besides)
        .values("endpoint_id")
        .annotate(first=Min("created_at"))
        .values_list("endpoint_id", "first")
    )


def lock(owner_id) -> None:
    """The person's turn lock (their endpoints' rows, in the one order of
    their ids), as `busy` and `in_flight_of` take it. Call inside the
    claim's transaction."""
    _lock(owner_id)


def anyone_waiting(owner_id, *, now: dt.datetime) -> bool:
    """Whether any of the person's deliveries waits for its turn
    (`waiting`): one query, no lock (`line` says which, under it)."""
    return bool(_one_waiting(owner_id, now))


def line(owner_id, *, now: dt.datetime) -> list:
    """The person's next in line (`next_in_line` says which), their ids in
    the order to send them. Two queries: what is in flight, the line."""
    sending = _in_flight(owner_id, now=now)
    free = settings.WEBHOOK_USER_IN_FLIGHT - len(sending)
    if free <= 0:
        return []
    found = _line_besides(owner_id, now, sending) if sending else _line_of(owner_id, now)
    endpoints: set = set()
    ids = []
    for pk, endpoint_id in found:
        if endpoint_id not in endpoints:
            if len(endpoints) >= free:
                continue
            endpoints.add(endpoint_id)
        ids.append(pk)
    return ids


def next_in_line(owner_id, *, now: dt.datetime) -> None:
    """After a send (or a batch's sends) of this person's ends: queue their
    line, after commit, as one batch task: their oldest deliveries waiting
    for their turn (`waiting`: due, never tried, or left `sending` by a dead
    worker) to endpoints with nothing in flight, up to SEND_BATCH, in the
    order they were made, for as many endpoints as their free places allow
    (WEBHOOK_USER_IN_FLIGHT less what is in flight). A batch sends one
    endpoint's rows one after another, one send in flight there, so a line
    to one endpoint flows at the receiver's speed, not one broker round trip
    a send (and a batch task that may go on claims the line itself instead,
    `sending.webhooks_send`). Without the dead workers' rows, such a row
    waited for a sweep to find its endpoint idle: long, on a busy endpoint
    (docs/faults.md)."""
    ids = line(owner_id, now=now)
    if ids:
        WebhookDelivery.objects.filter(pk__in=ids).update(
            next_attempt_at=now, enqueued_at=now, updated_at=now
        )
        dispatch.webhooks_queue_on_commit(ids)
