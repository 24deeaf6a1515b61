"""The benchmark's data, made in its own fresh database before the server
starts (run by benchmarks/run.py as `python -m benchmarks.fixtures`, with
DJANGO_SETTINGS_MODULE=benchmarks.settings):

- an assigner with an API token and a verified assignee;
- a webhook endpoint of the assigner's for the external system `bench`, at the
  benchmark's local receiver;
- `--active` Active commitments (`bench`/`sync-<n>`) for the completing sync,
  and `--completed` Completed ones (`bench`/`done-<n>`) for the replay,
  inserted in bulk: they are the stage, not the measurement;
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
    args = parser.parse_args()
    if args.more:
        print(json.dumps(more(args.people, args.active, args.prefix)))
        return
    if not args.receiver:
        parser.error("--receiver is needed to make the stage")

    assigner, assignee, token = the_people(args.receiver)
    the_commitments(assigner, assignee, args.active, args.completed)
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
                "inbox_statements": statements,
                "inbox_commitment_id": commitment_id,
                "session": session,
                "existing_ids": existing_ids,
            }
        )
    )


if __name__ == "__main__":
    main()
