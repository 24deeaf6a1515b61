"""The benchmark's data, made in its own fresh database before the server
starts (run by benchmarks/run.py as `python -m benchmarks.fixtures`, with
DJANGO_SETTINGS_MODULE=benchmarks.settings):

- an assigner with an API token and a verified assignee;
- a webhook endpoint of the assigner's for the external system `bench`, at the
  benchmark's local receiver;
- `--active` Active commitments (`bench`/`sync-<n>`) for the completing sync,
  and `--completed` Completed ones (`bench`/`done-<n>`) for the replay,
  inserted in bulk: they are the stage, not the measurement;
- with `--history N`, N past commitments, Completed long ago, and what they
  left (audit rows, outbox events, nudges and webhooks delivered), in bulk:
  a database in use's tables, not empty ones (HISTORY, below);
- the SQL statements of one real inbox call, captured through Django's
  connection (CaptureQueriesContext) for the database ceiling (pgbench);
- with `--gather`, the assigner's model key and a signed-in session (its
  cookie and CSRF token) for POST /api/gather.

With `--more`, on a stage made already (the sustained run,
benchmarks/sustained.py): `--people` verified people more to ask
(`bench-person-<k>@example.com`), and `--active` Active commitments named
`<--prefix><n>` for its completing syncs.

Prints one JSON object on its last line.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.settings")

import django

django.setup()

from allauth.account.models import EmailAddress  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.contenttypes.models import ContentType  # noqa: E402
from django.db import connection  # noqa: E402
from django.http import HttpRequest  # noqa: E402
from django.middleware.csrf import get_token  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402

from accounts.services import user_email_mark_verified  # noqa: E402
from commitments.models import Commitment, Status  # noqa: E402
from gather.services import model_key_set  # noqa: E402
from integrations.models import ApiToken as ApiTokenModel  # noqa: E402
from integrations.services import api_token_mint  # noqa: E402
from webhooks.models import WebhookEndpoint  # noqa: E402
from webhooks.services import webhook_endpoint_create  # noqa: E402

ASSIGNER = "bench-assigner@example.com"
ASSIGNEE = "bench-assignee@example.com"
SYSTEM = "bench"


def inbox_body(external_id: str) -> dict:
    return {
        "assignerEmail": ASSIGNER,
        "assigneeEmail": ASSIGNEE,
        "description": "Benchmark commitment",
        "deadline": "2030-03-01T17:00:00Z",
        "externalSystem": SYSTEM,
        "externalId": external_id,
    }


def the_people(receiver: str) -> tuple:
    """The assigner (with an API token and a webhook endpoint at `receiver`)
    and a verified assignee."""
    users = get_user_model().objects
    assigner = users.create_user(ASSIGNER, "bench passphrase long enough")
    assignee = users.create_user(ASSIGNEE, "bench passphrase long enough")
    for user in (assigner, assignee):
        user_email_mark_verified(user=user)
    token = api_token_mint(user=assigner, name="bench").plaintext
    webhook_endpoint_create(user=assigner, external_system=SYSTEM, url=receiver)
    return assigner, assignee, token


def the_commitments(assigner, assignee, active: int, completed: int) -> None:
    """`active` Active ones to complete, `completed` Completed ones to replay."""
    now = timezone.now()
    common = {
        "assigner": assigner,
        "assignee": assignee,
        "description": "Benchmark commitment",
        "external_system": SYSTEM,
        "activated_at": now,
    }
    rows = [
        Commitment(status=Status.ACTIVE, external_id=f"sync-{n}", **common) for n in range(active)
    ] + [
        Commitment(status=Status.COMPLETED, external_id=f"done-{n}", completed_at=now, **common)
        for n in range(completed)
    ]
    Commitment.objects.bulk_create(rows, batch_size=1000)
    statistics_taken()


# A database in use has history: the stage's delivery tables would start
# empty, and PostgreSQL plans what the worker runs (its prepared statements,
# the foreign-key checks' own) for the tables as they are when it first runs
# them. Planned for a few rows (a sequential scan), those plans stayed as the
# worker's part grew its tables to tens of thousands, on a server without
# autovacuum to analyze them (this machine's test server), and the drain ran
# slower than on a database in use (docs/benchmarks.md, "A stage with
# history, and a backlog the statistics had not seen"). So `--history N`
# adds N past commitments, Completed long ago between HISTORY_PEOPLE people,
# each with what its completion left: its audit rows, an outbox event
# dispatched, a nudge delivered and its attempt, a webhook delivered to the
# bench endpoint (its payload and attempt), in bulk, then ANALYZE. Old
# enough for no cap's or digest's window to count them.
HISTORY_PEOPLE = 1000
HISTORY_SYSTEM = "bench-past"
HISTORY = """
INSERT INTO accounts_user (id, password, is_superuser, is_staff, is_active, date_joined,
                           email, display_name, timezone)
SELECT md5('hu' || k)::uuid, '!history', false, false, true, now() - interval '800 days',
       format('bench-past-%%s@example.com', k), 'Past ' || k, 'UTC'
FROM generate_series(1, %(people)s) k;
INSERT INTO commitments_commitment (
  id, status, description, raw_text, deadline, external_system, external_id, created_at,
  updated_at, activated_at, completed_at, refused_at, renegotiated_at, withdrawn_at,
  assignee_id, assigner_id, terms_version, invitation_id, link_url)
SELECT md5('h' || i)::uuid, 'Completed', 'Benchmark history', NULL, NULL, %(system)s,
       'past-' || i, t, t + interval '1 day', t + interval '1 hour', t + interval '1 day',
       NULL, NULL, NULL, md5('hu' || (1 + (i + 1) %% %(people)s))::uuid,
       md5('hu' || (1 + i %% %(people)s))::uuid, 1, NULL, NULL
FROM (SELECT i, now() - interval '400 days' + i * interval '1 minute' AS t
      FROM generate_series(1, %(n)s) i) s;
INSERT INTO audit_auditevent (id, occurred_at, actor_kind, token_id, token_prefix, subject_id,
                              action, payload, subject_type_id, user_id, token_name)
SELECT md5('ha' || c.id || k)::uuid, c.created_at + k * interval '1 hour', 'user', NULL, '',
       c.id, (ARRAY['created', 'accepted', 'completed'])[k],
       (ARRAY['{"to": "Pending_Handshake"}', '{"from": "Pending_Handshake", "to": "Active"}',
              '{"from": "Active", "to": "Completed"}'])[k]::jsonb,
       %(subject_type)s, CASE WHEN k = 2 THEN c.assignee_id ELSE c.assigner_id END, ''
FROM commitments_commitment c CROSS JOIN generate_series(1, 3) k
WHERE c.external_system = %(system)s;
INSERT INTO commitments_outboxevent (kind, previous_status, new_status, occurred_at, actor_kind,
  actor_token_id, dispatched_at, dispatch_attempts, next_attempt_at, actor_user_id,
  commitment_id, request_id, detail)
SELECT 'completed', 'Active', 'Completed', c.completed_at, 'user', NULL,
       c.completed_at + interval '1 second', 1, c.completed_at, c.assignee_id, c.id, '', '{}'
FROM commitments_commitment c WHERE c.external_system = %(system)s ORDER BY c.completed_at;
INSERT INTO notifications_nudgedelivery (id, channel, status, attempts, next_attempt_at,
  claimed_until, enqueued_at, delivered_at, last_error, created_at, updated_at, event_id,
  recipient_id, counted_at, digest_id, is_digest, sender_id, address, reminder_id, coalesce_at,
  digest_reason)
SELECT md5('hn' || o.id)::uuid, 'email', 'delivered', 1, o.occurred_at, NULL, o.occurred_at,
       o.occurred_at + interval '2 seconds', '', o.occurred_at, o.occurred_at, o.id,
       c.assigner_id, o.occurred_at, NULL, false, c.assignee_id, '', NULL, NULL, 'cap'
FROM commitments_outboxevent o JOIN commitments_commitment c ON c.id = o.commitment_id
WHERE c.external_system = %(system)s;
INSERT INTO notifications_nudgeattempt (channel, started_at, duration_ms, outcome, status_code,
  error, delivery_id)
SELECT 'email', d.delivered_at - interval '1 second', 20, 'delivered', NULL, '', d.id
FROM notifications_nudgedelivery d WHERE d.id = md5('hn' || d.event_id)::uuid;
INSERT INTO webhooks_webhookdelivery (id, event_name, is_test, status, attempts,
  first_attempt_at, next_attempt_at, claimed_until, enqueued_at, delivered_at, failed_at,
  last_status_code, last_response_excerpt, last_error, replays, created_at, updated_at,
  commitment_id, event_id, endpoint_id)
SELECT md5('hw' || o.id)::uuid, 'commitment.completed', false, 'delivered', 1, o.occurred_at,
       o.occurred_at, NULL, o.occurred_at, o.occurred_at + interval '1 second', NULL, 200, '',
       '', 0, o.occurred_at, o.occurred_at, o.commitment_id, o.id, %(endpoint)s::uuid
FROM commitments_outboxevent o JOIN commitments_commitment c ON c.id = o.commitment_id
WHERE c.external_system = %(system)s;
INSERT INTO webhooks_webhookpayload (delivery_id, body, event_timestamp)
SELECT w.id, '{}', w.created_at FROM webhooks_webhookdelivery w
WHERE w.id = md5('hw' || w.event_id)::uuid;
INSERT INTO webhooks_webhookattempt (started_at, duration_ms, outcome, status_code,
  response_excerpt, error, delivery_id)
SELECT w.first_attempt_at, 5, 'delivered', 200, '', '', w.id FROM webhooks_webhookdelivery w
WHERE w.id = md5('hw' || w.event_id)::uuid
"""


def the_history(n: int) -> None:
    """`n` past commitments and what they left (HISTORY, above), in bulk."""
    if n <= 0:
        return
    endpoint = WebhookEndpoint.objects.get()
    params: dict[str, int | str] = {
        "n": n,
        "people": HISTORY_PEOPLE,
        "system": HISTORY_SYSTEM,
        "endpoint": str(endpoint.pk),
        "subject_type": ContentType.objects.get_for_model(Commitment).pk,
    }
    with connection.cursor() as cursor:
        for statement in filter(str.strip, HISTORY.split(";\n")):
            cursor.execute(statement, params)
    statistics_taken()


def statistics_taken() -> None:
    """ANALYZE, as autovacuum does to a database in use. Without statistics
    PostgreSQL chooses a prepared statement's generic plan blind: after the
    inbox part had added its rows to a stage never analyzed, the completing
    sync's compare-and-set looked its commitment up through
    cmt_assigner_st_changed_idx and filtered the assigner's 16,000 Active
    ones (8 ms a call) instead of its unique external reference (0.7 ms)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


PERSON_EMAIL = "bench-person-{k}@example.com"


def person_email(k: int) -> str:
    return PERSON_EMAIL.format(k=k)


def more(people: int, active: int, prefix: str) -> dict:
    """For the sustained run: `people` verified people to ask (bulk: no
    password to hash, none signs in), and `active` Active commitments of the
    assigner's named `<prefix><n>`."""
    users = get_user_model().objects
    assigner, assignee = users.get(email=ASSIGNER), users.get(email=ASSIGNEE)
    if people:
        made = []
        for k in range(people):
            person = get_user_model()(email=person_email(k))
            person.set_unusable_password()
            made.append(person)
        users.bulk_create(made, batch_size=1000)
        EmailAddress.objects.bulk_create(
            [EmailAddress(user=p, email=p.email, verified=True, primary=True) for p in made],
            batch_size=1000,
        )
    now = timezone.now()
    Commitment.objects.bulk_create(
        [
            Commitment(
                status=Status.ACTIVE,
                external_id=f"{prefix}{n}",
                assigner=assigner,
                assignee=assignee,
                description="Benchmark commitment",
                external_system=SYSTEM,
                activated_at=now,
            )
            for n in range(active)
        ],
        batch_size=1000,
    )
    statistics_taken()
    return {"people": people, "person_email": PERSON_EMAIL, "active": active}


def one_inbox_call_captured(token: str) -> tuple[list[str], str]:
    """The SQL of one real inbox call, through every middleware, as the load
    will make it: the second, whose token was used a moment ago (the first
    writes last_used_at, which the steady state does once a minute). Returns
    the statements and the new commitment's id."""
    client = Client(HTTP_HOST="localhost")

    def inbox(external_id: str):
        return client.post(
            "/api/v1/inbox",
            data=json.dumps(inbox_body(external_id)),
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}"},
        )

    inbox("captured-1")
    with CaptureQueriesContext(connection) as captured:
        response = inbox("captured-2")
    if response.status_code != 201:
        raise SystemExit(
            f"The captured inbox call failed: {response.status_code} {response.content!r}"
        )
    return [q["sql"] for q in captured.captured_queries], response.json()["id"]


def a_gather_session(assigner) -> dict:
    """The assigner's model key (the fake provider takes any), and a signed-in
    session with its CSRF token, as the Capture page has them."""
    model_key_set(user=assigner, provider="openai", key="sk-bench-" + "x" * 40)
    browser = Client(HTTP_HOST="localhost")
    browser.force_login(assigner)
    # The CSRF cookie holds the secret, the header a masked token of it.
    csrf_request = HttpRequest()
    header = get_token(csrf_request)
    return {
        "sessionid": browser.cookies[settings.SESSION_COOKIE_NAME].value,
        "csrfcookie": csrf_request.META["CSRF_COOKIE"],
        "csrfheader": header,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--active", type=int, default=1000)
    parser.add_argument("--completed", type=int, default=200)
    parser.add_argument("--receiver")
    parser.add_argument("--gather", action="store_true", help="A model key and a session.")
    parser.add_argument("--more", action="store_true", help="More, on a stage made already.")
    parser.add_argument("--people", type=int, default=0)
    parser.add_argument("--prefix", default="more-")
    parser.add_argument(
        "--history", type=int, default=0, help="Past commitments and what they left."
    )
    args = parser.parse_args()
    if args.more:
        print(json.dumps(more(args.people, args.active, args.prefix)))
        return
    if not args.receiver:
        parser.error("--receiver is needed to make the stage")

    assigner, assignee, token = the_people(args.receiver)
    the_commitments(assigner, assignee, args.active, args.completed)
    the_history(args.history)
    statements, commitment_id = one_inbox_call_captured(token)
    session = a_gather_session(assigner) if args.gather else {}
    # Rows the call read, not made: the ceiling keeps their ids.
    existing_ids = [str(pk) for pk in (assigner.pk, assignee.pk, ApiTokenModel.objects.get().pk)]
    print(
        json.dumps(
            {
                "token": token,
                "assigner": ASSIGNER,
                "assignee": ASSIGNEE,
                "system": SYSTEM,
                "active": args.active,
                "completed": args.completed,
                "history": args.history,
                "inbox_statements": statements,
                "inbox_commitment_id": commitment_id,
                "session": session,
                "existing_ids": existing_ids,
            }
        )
    )


if __name__ == "__main__":
    main()
