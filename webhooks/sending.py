"""Webhook deliveries sent: the leased-send protocol (lib.deliveries) with
the webhooks' policy (docs/delivery.md, "Outbound webhooks"). The worker
task (`webhooks.tasks.deliver_webhook`, on its own queue) calls
`webhook_send`; rows are made by `webhooks.dispatch`.

Policy: sends take turns per endpoint and per person (`webhooks.turns`);
nothing goes to a paused endpoint, nor to one whose owner is deactivated or
whose secret or URL cannot be read (it is paused). 2xx is delivered; `410
Gone` fails the delivery and pauses the endpoint; anything else is retried
on the schedule (`webhooks.schedule`). A test event is sent once.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import time
import uuid
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from lib import deliveries
from lib.db import Prepared
from lib.text import excerpt
from webhooks import dispatch, payloads, turns
from webhooks.models import (
    LOST_SECRET_REASON,
    LOST_URL_REASON,
    OWNER_INACTIVE_REASON,
    AttemptOutcome,
    WebhookAttempt,
    WebhookDelivery,
    WebhookDeliveryStatus,
)
from webhooks.schedule import next_attempt_at
from webhooks.transport import HOST_REFUSED, Outcome, webhook_post

__all__ = ["HOST_REFUSED", "webhook_send", "webhooks_send"]

log = logging.getLogger(__name__)


def _claim(delivery_id, now: dt.datetime) -> deliveries.Claim[WebhookDelivery] | None:
    """Claim the delivery and record the attempt, or settle it without one
    (endpoint paused, owner deactivated, secret or URL unreadable), or leave
    it for its turn. None when there is nothing to send now."""
    with transaction.atomic():
        rows = WebhookDelivery.objects.all()
        found = (
            rows.filter(pk=delivery_id)
            .values_list("pk", "endpoint_id", "endpoint__user_id", "enqueued_at")
            .first()
        )
        if found is None:
            return None
        pk, endpoint_id, owner_id, stamp = found
        if turns.busy(owner_id, endpoint_id, now=now, besides=delivery_id) or _behind(
            rows, delivery_id, endpoint_id, now=now
        ):
            # Its turn comes when a send of this person's ends, or after
            # WEBHOOK_TIMEOUT through the sweep.
            dispatch.leave_waiting({pk: stamp}, now=now)
            return None
        # The retry window starts at the first claim since creation or replay.
        first = Coalesce("first_attempt_at", Value(now))
        if not deliveries.claim(rows, pk=delivery_id, now=now, first_attempt_at=first):
            return None
        delivery = rows.select_related("endpoint__user", "payload").get(pk=delivery_id)
        deliveries.close_interrupted(delivery, "the request may have been received.")
        if _settled_without_attempt(delivery, now):
            return None
        attempt = delivery.attempt_log.create(started_at=now)
    return deliveries.Claim(delivery, attempt.pk)


def _behind(rows, delivery_id, endpoint_id, *, now: dt.datetime) -> bool:
    """An older delivery to its endpoint waits for its turn: this one goes
    after it (`turns.older_waiting`)."""
    first = turns.older_waiting({endpoint_id}, now=now, besides=[delivery_id]).get(endpoint_id)
    return first is not None and rows.filter(pk=delivery_id, created_at__gt=first).exists()


def webhook_send(*, delivery_id) -> str | None:
    """Try to send one webhook delivery now. Returns the attempt's outcome,
    or None when there was nothing to do (not due, already settled, being
    sent by another worker, or failed without an attempt)."""
    now = timezone.now()
    claim = _claim(delivery_id, now)
    if claim is None:
        return None
    # A batch of one: the line it ends goes on in this task as a batch's does.
    return _line([claim], time.monotonic(), {})


def _send_claimed(
    claim: deliveries.Claim[WebhookDelivery],
    *,
    next_in_line: bool,
    begin: WebhookDelivery | None = None,
) -> tuple[str, int | None]:
    """Send a claimed delivery and record its outcome (with `next_in_line`,
    then queue the person's next one waiting; with `begin`, the next row of
    its batch, write that one's attempt with a delivered outcome: its id is
    returned)."""
    delivery = claim.row
    now = timezone.now()
    try:
        outcome = webhook_post(
            delivery_id=delivery.pk,
            event_name=delivery.event_name,
            url=delivery.endpoint.url,
            secrets=delivery.endpoint.signing_secrets(now),
            body=delivery.payload.body_bytes,
            now=now,
        )
    except Exception as exc:  # a bug or a time limit: log it, retry like a failure
        log.exception("Webhook delivery %s failed unexpectedly", delivery.pk)
        outcome = Outcome(delivered=False, error=excerpt(repr(exc)))
    # From the answer until this commit is the duplicate window: keep it short.
    return _record(claim, outcome, next_in_line=next_in_line, begin=begin)


# A batch task that ends with its person's line waiting (a line to one
# endpoint) claims the line's next run itself, as the task that
# `turns.next_in_line` would queue would claim it, instead of a broker round
# trip and a new task's claim: at most LINE_RUNS runs a task (the first
# included), and a new run only within LINE_SECONDS of the task's start, so
# one line never holds a webhook worker for long (the other endpoints' tasks
# wait in the queue meanwhile); past them the line is queued as before.
LINE_RUNS = 10
LINE_SECONDS = 10.0


def webhooks_send(*, delivery_ids: list) -> dict[str, int]:
    """A batch (`deliver_webhooks`): claimed together (`_claim_many`: whose
    turn it is, one conditional UPDATE for all), then each sent and recorded
    on its own as `webhook_send` does it, one at a time, each endpoint's in
    the order they were made; lib.outbound keeps each receiver's connection
    open between them. A send that fails, even unexpectedly, is recorded (or
    left to its lease), and the batch's later deliveries to that endpoint
    are not sent after it: they go back to pending, due with its retry (or
    at once when it failed for good), so its line keeps its order; the other
    endpoints' go on. Sends start only within the batch's window (a third of
    the lease): the ones left then are released and queued again. Once the
    batch is over, its first person's next in line is claimed by this task
    and sent as another run of it (at most LINE_RUNS runs, none after LINE_SECONDS: `_line`), and
    each other person's next in line is queued (`turns.next_in_line`).
    Returns how many ended how, over all the runs."""
    claims = _claim_many(delivery_ids, timezone.now())
    outcomes: dict[str, int] = {}
    _line(claims, time.monotonic(), outcomes)
    return outcomes


def _line(
    claims: list[deliveries.Claim[WebhookDelivery]], started: float, outcomes: dict[str, int]
) -> str | None:
    """Send the claimed run, then the runs this task claims after it
    (`_after`), counting how each send ended in `outcomes`. Every run's sends
    start within the window of the task's start (`started`), which is never
    later than the run's own claim, so every lease outlasts its sends as a
    single batch's does. Returns the first send's outcome (None: none)."""
    first = None
    runs = 0
    while claims:
        runs += 1
        released, ended = _run(claims, started, outcomes)
        if first is None:
            first = ended
        go_on = (
            not released
            and runs < LINE_RUNS
            and time.monotonic() - started < min(LINE_SECONDS, deliveries.batch_window())
        )
        claims = _after(claims, go_on=go_on)
    return first


def _run(
    claims: list[deliveries.Claim[WebhookDelivery]], started: float, outcomes: dict[str, int]
) -> tuple[bool, str | None]:
    """One run's sends (`webhooks_send` says how), and the rows held back
    after a failure. Returns whether the window ran out (the rest released
    and queued) and the first send's outcome."""
    stopped: dict = {}  # endpoint id -> the ids held back after its failure
    failed: dict = {}  # endpoint id -> the delivery whose send failed
    unmade: list = []  # the attempts begun for them, never made
    released = False
    first = None
    for index in range(len(claims)):
        claim = claims[index]
        if time.monotonic() - started > deliveries.batch_window():
            with transaction.atomic():
                rest: list[Any] = []
                for later in claims[index:]:
                    if later.row.endpoint_id in stopped:
                        stopped[later.row.endpoint_id].append(later.row.pk)
                        if later.attempt_id is not None:
                            unmade.append(later.attempt_id)
                    else:
                        rest.append(later)
                left = deliveries.release(rest, now=timezone.now())
                dispatch.webhooks_queue_on_commit(left)
            outcomes["released"] = outcomes.get("released", 0) + len(left)
            released = True
            break
        endpoint_id = claim.row.endpoint_id
        if endpoint_id in stopped:
            stopped[endpoint_id].append(claim.row.pk)
            if claim.attempt_id is not None:  # begun with the send before it
                unmade.append(claim.attempt_id)
            continue
        following = claims[index + 1].row if index + 1 < len(claims) else None
        try:
            if claim.attempt_id is None:  # the batch's first, or after a failure
                attempt = claim.row.attempt_log.create(started_at=timezone.now())
                claim = replace(claim, attempt_id=attempt.pk)
            claim = replace(claim, started=time.monotonic())
            outcome, begun = _send_claimed(claim, next_in_line=False, begin=following)
            if begun is not None:
                claims[index + 1] = replace(claims[index + 1], attempt_id=begun)
        except Exception:
            # Not recorded (the database failed?): its lease runs out and the
            # sweep queues it again.
            log.exception("Webhook delivery %s failed in its batch", claim.row.pk)
            outcome = "error"
        if first is None:
            first = outcome
        if outcome != AttemptOutcome.DELIVERED:
            stopped[endpoint_id] = []
            failed[endpoint_id] = claim.row.pk
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    held_back = [pk for ids in stopped.values() for pk in ids]
    if held_back:
        with transaction.atomic():
            WebhookAttempt.objects.filter(pk__in=unmade).delete()
            _hold_back(stopped, failed, now=timezone.now())
        outcomes["held back"] = outcomes.get("held back", 0) + len(held_back)
    return released, first


def _after(
    claims: list[deliveries.Claim[WebhookDelivery]], *, go_on: bool
) -> list[deliveries.Claim[WebhookDelivery]]:
    """A run is over: each of its people's next in line queued, but, with
    `go_on`, the first person's claimed by this task (`_claim_line`) and
    returned, its next run. When that claim fails, nothing of it is kept:
    the line is due and unqueued, and the sweep takes it."""
    owners = list(dict.fromkeys(claim.row.endpoint.user_id for claim in claims))
    mine = owners[0] if go_on and owners else None
    others = [owner_id for owner_id in owners if owner_id != mine]
    if others:
        with transaction.atomic():
            for owner_id in others:
                turns.next_in_line(owner_id, now=timezone.now())
    # One look without the lock first: a line that ends costs one query.
    if mine is None or not turns.anyone_waiting(mine, now=timezone.now()):
        return []
    try:
        with transaction.atomic():
            return _claim_line(mine, timezone.now())
    except Exception:
        log.exception("The next run of %s's webhook line could not be claimed", mine)
        return []


def _claim_line(owner_id, now: dt.datetime) -> list[deliveries.Claim[WebhookDelivery]]:
    """The person's next in line (`turns.line`), claimed for this task: the
    claim a task queued for it by `turns.next_in_line` would make, made
    under the person's turn lock, taken first, so what is in flight is read
    after it. Each line is their oldest deliveries waiting for their turn
    to endpoints with nothing in flight, so nothing older waits outside it
    and the turns hold without `_claim_many`'s look. The rows are claimed
    with a lease as any claim (`deliveries.claim_many`: the sweep leaves
    them alone until it runs out, a later claim fences this one out), those
    waiting for their turn (`turns.waiting`) whether due yet or not, as
    `next_in_line` would have made them due. Call inside a transaction."""
    turns.lock(owner_id)
    ids = turns.line(owner_id, now=now)
    if not ids:
        return []
    rows = WebhookDelivery.objects.all()
    # Under the turn lock no other claim of theirs runs; a row locked now is
    # held by a brief write that takes no turn lock (a dispatch leaving it
    # waiting, `dispatch.leave_waiting`; the sweep stamping it): waited for,
    # not skipped. Skipped, the run took nothing, the line ended with the
    # row waiting and nobody to queue it: it waited for the sweep (36 s in a
    # sustained run at 30 calls a second). Those writes never wait for a row
    # themselves (SKIP LOCKED), so this wait closes no deadlock with them.
    taken = deliveries.claim_many(
        rows,
        pks=ids,
        now=now,
        where=turns.waiting(now),
        first="first_attempt_at",
        skip_locked=False,
    )
    return _claimed(taken, now)


def _hold_back(stopped: dict, failed: dict, *, now: dt.datetime) -> None:
    """The batch's deliveries after a failed send to their endpoint: not
    sent (no attempt was made for them), pending again with their claim not
    counted, due when the failed one is: at its retry, at the end of its
    lease when its outcome could not be recorded, at once when it failed for
    good. Not queued: the sweep or the person's next in line takes them when
    due, in the order they were made, the failed one first. Their retry
    window has started (`first_attempt_at`, set by the claim), so they do
    not count as never tried, which would let them go before it."""
    for endpoint_id, ids in stopped.items():
        if not ids:
            continue
        status, retry, lease = (
            WebhookDelivery.objects.filter(pk=failed[endpoint_id])
            .values_list("status", "next_attempt_at", "claimed_until")
            .get()
        )
        due = None
        if status == WebhookDeliveryStatus.PENDING:
            due = retry
        elif status == WebhookDeliveryStatus.SENDING:
            due = lease
        WebhookDelivery.objects.filter(pk__in=ids, status=WebhookDeliveryStatus.SENDING).update(
            status=WebhookDeliveryStatus.PENDING,
            attempts=F("attempts") - 1,
            next_attempt_at=max(due or now, now),
            claimed_until=None,
            enqueued_at=None,
            updated_at=now,
        )


# A batch's reads, compiled once per batch size (lib.db.Prepared): its rows'
# endpoints, owners and states, and the claimed rows with their bodies.
_batch_of = Prepared(
    lambda ids: (
        WebhookDelivery.objects.filter(pk__in=ids)
        .order_by()
        .values_list(
            "pk",
            "endpoint_id",
            "endpoint__user_id",
            "created_at",
            "enqueued_at",
            "status",
            "claimed_until",
        )
    )
)
_loaded_many = Prepared(
    lambda ids: (
        WebhookDelivery.objects.select_related("endpoint__user", "payload")
        .filter(pk__in=ids)
        .order_by("created_at", "pk")
    )
)


def _claim_many(delivery_ids: list, now: dt.datetime) -> list[deliveries.Claim[WebhookDelivery]]:
    """`_claim` for a batch, in one transaction and a few statements: the
    rows and their owners read at once; every owner's turn lock taken in one
    statement (their endpoints' rows, in the one order of their ids, as
    `turns.busy` takes one person's); what is in flight read once; then, in
    the order given, a row whose endpoint another worker is sending to, or
    whose owner has WEBHOOK_USER_IN_FLIGHT endpoints in flight counting the
    ones this batch takes, or made after a delivery to its endpoint that
    waits for its turn outside the batch (`turns.older_waiting`: so each
    endpoint's line goes in the order it was made, whichever task a worker
    takes first), waits for its turn as `_claim` leaves it; the
    rest are claimed in one statement and their attempts begun in two. A
    batch sends one at a time, so the rows it takes for one endpoint are
    one send in flight there. Returned in the order they were made, so each
    endpoint's go in order."""
    ids = []
    for delivery_id in delivery_ids:
        with contextlib.suppress(ValueError):
            ids.append(uuid.UUID(str(delivery_id)))
    rows = WebhookDelivery.objects.all()
    with transaction.atomic():
        found = {}
        stamps = {}  # each one's `enqueued_at` before the look (`dispatch.leave_waiting`)
        live = set()  # the endpoints of the batch's own rows another worker holds
        for pk, endpoint_id, owner_id, created_at, stamp, status, lease in _batch_of(ids):
            found[pk] = (endpoint_id, owner_id, created_at)
            stamps[pk] = stamp
            if status == WebhookDeliveryStatus.SENDING and lease is not None and lease > now:
                live.add((owner_id, endpoint_id))
        if not found:
            return []
        owners = {owner_id for _, owner_id, _ in found.values()}
        flying, older = turns.in_flight_of(owners, now=now, besides=list(found))
        # A row of the batch being sent by another worker (a message queued
        # twice, a run a dead worker holds) is a send in flight to its
        # endpoint too: the batch's later rows to it wait behind it.
        for owner_id, endpoint_id in live:
            flying.setdefault(owner_id, set()).add(endpoint_id)
        ready, waiting = [], []
        taking: dict = {}
        for pk in dict.fromkeys(ids):
            if pk not in found:
                continue
            endpoint_id, owner_id, created_at = found[pk]
            others, mine = flying.get(owner_id, set()), taking.setdefault(owner_id, set())
            first = older.get(endpoint_id)
            if (
                endpoint_id in others
                or (first is not None and first < created_at)
                or (
                    endpoint_id not in mine
                    and len(others | mine) >= settings.WEBHOOK_USER_IN_FLIGHT
                )
            ):
                waiting.append(pk)
                continue
            mine.add(endpoint_id)
            ready.append(pk)
        if waiting:
            # Their turn comes when a send of this person's ends, or after
            # WEBHOOK_TIMEOUT through the sweep.
            dispatch.leave_waiting({pk: stamps[pk] for pk in waiting}, now=now)
        # The retry window starts at the first claim since creation or replay.
        taken = deliveries.claim_many(rows, pks=ready, now=now, first="first_attempt_at")
        return _claimed(taken, now)


def _claimed(taken: list, now: dt.datetime) -> list[deliveries.Claim[WebhookDelivery]]:
    """The rows just claimed, loaded, in the order they were made; those
    with nothing to send settled (`_settled_without_attempt`), and attempts
    their previous workers left open closed. In the claim's transaction."""
    if not taken:
        return []
    claimed = []
    for delivery in _loaded_many(list(taken)):
        if not _settled_without_attempt(delivery, now):
            claimed.append(delivery)
    # Each attempt is written as its send begins (`webhooks_send`): a row
    # claimed and not sent has none, and a worker that dies leaves no
    # attempt that was never made.
    deliveries.close_interrupted_many(claimed, "the request may have been received.")
    return [deliveries.Claim(delivery, None) for delivery in claimed]


def _settled_without_attempt(delivery: WebhookDelivery, now: dt.datetime) -> bool:
    """Just claimed, and nothing to send: its endpoint is paused, or its
    owner is deactivated, or its secret or URL unreadable (the endpoint is
    paused then): failed without an attempt. In the claim's transaction."""
    endpoint = delivery.endpoint
    for broken, reason in (
        (not endpoint.user.is_active, OWNER_INACTIVE_REASON),
        (endpoint.secret_lost, LOST_SECRET_REASON),
        (endpoint.url_lost, LOST_URL_REASON),
        (endpoint.is_paused and not delivery.is_test, None),
    ):
        if broken:
            if reason is not None:
                dispatch.webhook_endpoint_pause_by_service(endpoint, reason=reason, now=now)
            reason = reason or f"The endpoint is paused: {endpoint.paused_reason}"
            settled = deliveries.Claim(delivery, None)
            deliveries.fail(settled, now=now, failed_at=now, last_error=excerpt(reason, 1000))
            return True
    return False


def _record(
    claim: deliveries.Claim[WebhookDelivery],
    outcome: Outcome,
    *,
    next_in_line: bool = True,
    begin: WebhookDelivery | None = None,
) -> tuple[str, int | None]:
    now = timezone.now()
    delivery = claim.row
    result = AttemptOutcome.DELIVERED if outcome.delivered else AttemptOutcome.FAILED
    begun = None
    if outcome.delivered:
        answer = {"status_code": outcome.status_code, "response_excerpt": outcome.response_excerpt}
        error = excerpt(outcome.error, 1000)
        last = {f"last_{k}": v for k, v in answer.items()} | {"last_error": error}
        # One statement, no transaction: the duplicate window's shortest.
        begun = deliveries.record_delivered_ended(
            claim, now=now, attempt={"error": error, **answer}, begin=begin, **last
        )
        if next_in_line:
            with transaction.atomic():
                turns.next_in_line(delivery.endpoint.user_id, now=now)
    else:
        _record_failure(claim, outcome, now=now, next_in_line=next_in_line)
    log.info(
        "Webhook delivery %s (%s): %s %s",
        delivery.pk,
        delivery.event_name,
        result,
        outcome.status_code or outcome.error,
    )
    return result, begun


def _record_failure(
    claim: deliveries.Claim[WebhookDelivery],
    outcome: Outcome,
    *,
    now: dt.datetime,
    next_in_line: bool,
) -> None:
    delivery = claim.row
    answer = {"status_code": outcome.status_code, "response_excerpt": outcome.response_excerpt}
    error = excerpt(outcome.error, 1000)
    last = {f"last_{k}": v for k, v in answer.items()} | {"last_error": error}
    with transaction.atomic():
        deliveries.attempt_end(claim, AttemptOutcome.FAILED, error=error, **answer)
        due = None
        if outcome.gone and not delivery.is_test:
            reason = (
                f"The receiver answered 410 Gone on {payloads.iso_millis(now)}; "
                "resume the endpoint when it accepts events again."
            )
            dispatch.webhook_endpoint_pause_by_service(delivery.endpoint, reason=reason, now=now)
        elif not delivery.is_test:
            assert delivery.first_attempt_at is not None  # the claim sets it
            due = next_attempt_at(
                attempts=claim.fence,
                first_attempt_at=delivery.first_attempt_at,
                now=now,
                retry_after=outcome.retry_after,
            )
        if due is None:
            deliveries.fail(claim, now=now, failed_at=now, **last)
        else:
            deliveries.retry_later(claim, due=due, now=now, **last)
        if next_in_line:
            turns.next_in_line(delivery.endpoint.user_id, now=now)
