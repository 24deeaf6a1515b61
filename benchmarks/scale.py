"""A million commitments: the pages, calls and tasks at 1,000 and at 1,000,000
commitments, side by side, with every SQL statement's plan checked.

    python -m benchmarks.scale                      # 1,000 and 1,000,000, side by side
    python -m benchmarks.scale --reuse              # the same, reusing filled databases
    python -m benchmarks.scale --commitments 1000   # one size alone (the baseline)

Each size has a database of its own (DATABASE_URL's name plus
`_scale<N>`), migrated and filled in bulk on PostgreSQL's side (INSERT ...
SELECT over generate_series, the secondary indexes dropped during the fill
and built after it, triggers and foreign-key checks off for the fill's
session): N commitments among N/100 people (at most 10,000, at least 10),
5 audit rows each, one outbox event each (dispatched) with its nudge
delivery (delivered); one heavy user with min(5,000, N/2) commitments (60 %
asked of them, 40 % theirs); a typical person has about 200 at every size.
Statuses: 5 % Draft, 8 % waiting for the handshake, 20 % Active, 52 %
Completed, 8 % declined, 7 % withdrawn; three in four with a deadline,
Active ones either well ahead or long overdue; 40 % with a Jira reference.
Everything bulk-made is older than 30 days, so the reminders and the sweep
find only what the run plants at both sizes alike (five of each kind due:
due soon, overdue, waiting for the handshake, an undispatched event, a
pending nudge), moved to "now" before each run. `--reuse` keeps a database
filled for the same size (its comment says so) and migrates it (so a new
index migration is applied to the filled tables, as in production).

Measured in one process through Django's whole request handler
(django.test.Client, the production settings of benchmarks/settings.py,
DEBUG=0), for the heavy user and a typical one: the Accord, its fragment,
the dashboard, a commitment page, an inbox call, a completing sync, the
read API's list; then the admin's audit list (plain, filtered by action, by
actor kind, by a day, searched by a subject id) as a superuser, and the
sweep and the reminders' task. Writes run in a transaction rolled back
after each call, so every round does the same work. Per measurement: the
median wall time of `--rounds` calls after a warm-up, the query count, and
`EXPLAIN (FORMAT JSON)` of every statement it issued: a sequential scan on
a large table (commitments, audit events, outbox, deliveries) is flagged.
The table prints both sizes side by side: the time ratio (goal: at most
2x), the query counts (goal: equal) and the plans (goal: no flagged scan at
the large size). See docs/benchmarks.md.

Needs DATABASE_URL (PostgreSQL, as a superuser: the fill turns triggers off
for its session) and REDIS_URL.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

if __name__ == "__main__" and not __package__:
    # Run as a script, benchmarks/ is the first entry of sys.path.
    from harness import reexec_as_module  # type: ignore[import-not-found]

    reexec_as_module("benchmarks.scale")

import psycopg
from psycopg import sql as pgsql

from benchmarks.harness import (
    PYTHON,
    ROOT,
    fresh_database,
    log,
    now_iso,
    outer_or_inner,
    own_database_and_redis,
    run_checked,
    service_env,
)

# Tables whose sequential scan is flagged: they grow with the commitments.
LARGE_TABLES = (
    "commitments_commitment",
    "audit_auditevent",
    "commitments_outboxevent",
    "notifications_nudgedelivery",
    "notifications_nudgeattempt",
    "webhooks_webhookdelivery",
)
FILLED = (
    "commitments_commitment",
    "audit_auditevent",
    "commitments_outboxevent",
    "notifications_nudgedelivery",
)
COUNT = pgsql.SQL("SELECT count(*) FROM {}")
EXPLAINED = ("SELECT", "WITH", "INSERT", "UPDATE", "DELETE")
AUDIT_PER_COMMITMENT = 5
PLANTED = 5  # of each kind of due work, at every size
HEAVY_EMAIL = "heavy@scale.example"
TYPICAL_EMAIL = "person-00002@scale.example"
OTHER_EMAIL = "person-00003@scale.example"


def shape(commitments: int) -> dict[str, int]:
    people = max(10, min(10_000, commitments // 100))
    return {"commitments": commitments, "people": people, "heavy": min(5_000, commitments // 2)}


# --- the fill ---------------------------------------------------------------------------

FILL_USERS = """
INSERT INTO accounts_user (id, password, is_superuser, is_staff, is_active, date_joined,
                           email, display_name, timezone)
SELECT md5('u' || i)::uuid, '!scale', false, false, true, now() - interval '800 days',
       CASE WHEN i = 1 THEN %(heavy_email)s ELSE format('person-%%s@scale.example',
            lpad(i::text, 5, '0')) END,
       CASE WHEN i = 1 THEN 'Heavy User' ELSE 'Person ' || i END, 'UTC'
FROM generate_series(1, %(people)s) i;
INSERT INTO account_emailaddress (email, verified, "primary", user_id)
SELECT email, true, true, id FROM accounts_user WHERE email LIKE '%%@scale.example';
"""

# One row a commitment: the people (the heavy user's first, then two
# different others), a status and the times that go with it.
FILL_COMMITMENTS = """
WITH raw AS (
  SELECT i, random() AS r, random() AS d, random() AS x,
         now() - interval '30 days' - random() * interval '700 days' AS created,
         2 + floor(random() * (%(people)s - 1))::int AS a,
         floor(random() * (%(people)s - 2))::int AS skip
  FROM generate_series(1, %(commitments)s) i
), people AS (
  SELECT *, 2 + (a - 2 + 1 + skip) %% (%(people)s - 1) AS b,
         CASE WHEN r < 0.05 THEN 'Draft' WHEN r < 0.13 THEN 'Pending_Handshake'
              WHEN r < 0.33 THEN 'Active' WHEN r < 0.85 THEN 'Completed'
              WHEN r < 0.93 THEN 'Refused' ELSE 'Withdrawn' END AS status
  FROM raw
), rows AS (
  SELECT *,
         CASE WHEN i <= %(heavy)s AND i %% 5 < 3 THEN 1 ELSE a END AS assigner_n,
         CASE WHEN i <= %(heavy)s AND i %% 5 < 3 THEN a
              WHEN i <= %(heavy)s THEN 1 ELSE b END AS assignee_n,
         created + d * interval '20 days' AS changed
  FROM people
)
INSERT INTO commitments_commitment (
  id, status, description, raw_text, deadline, external_system, external_id, created_at,
  updated_at, activated_at, completed_at, refused_at, renegotiated_at, withdrawn_at,
  assignee_id, assigner_id, terms_version, invitation_id, link_url)
SELECT md5('c' || i)::uuid, status,
       'Commitment ' || i || ': send the quarterly figures to finance', NULL,
       CASE WHEN x >= 0.75 THEN NULL
            WHEN status = 'Active' AND x < 0.5
                 THEN now() + interval '3 days' + d * interval '120 days'
            WHEN status = 'Active'
                 THEN now() - interval '10 days' - d * interval '300 days'
            ELSE created + interval '1 day' + d * interval '60 days' END,
       CASE WHEN x < 0.4 THEN 'jira' END, CASE WHEN x < 0.4 THEN 'S-' || i END,
       created, changed,
       CASE WHEN status IN ('Active', 'Completed') THEN created + interval '1 hour' END,
       CASE WHEN status = 'Completed' THEN changed END,
       CASE WHEN status = 'Refused' THEN changed END, NULL,
       CASE WHEN status = 'Withdrawn' THEN changed END,
       md5('u' || assignee_n)::uuid, md5('u' || assigner_n)::uuid, 1, NULL, NULL
FROM rows;
"""

FILL_AUDIT = """
INSERT INTO audit_auditevent (id, occurred_at, actor_kind, token_id, token_prefix, subject_id,
                              action, payload, subject_type_id, user_id, token_name)
SELECT md5('a' || c.id || k)::uuid, c.created_at + k * interval '1 hour', 'user', NULL, '',
       c.id, (ARRAY['created', 'accepted', 'commented', 'renegotiated', 'completed'])[k],
       CASE k WHEN 1 THEN '{"to": "Pending_Handshake"}'
              WHEN 2 THEN '{"from": "Pending_Handshake", "to": "Active"}'
              WHEN 5 THEN jsonb_build_object('from', 'Active', 'to', c.status)::text
              ELSE '{}' END::jsonb,
       %(subject_type)s, CASE WHEN k %% 2 = 0 THEN c.assignee_id ELSE c.assigner_id END, ''
FROM commitments_commitment c CROSS JOIN generate_series(1, %(per)s) k;
"""

FILL_OUTBOX = """
INSERT INTO commitments_outboxevent (kind, previous_status, new_status, occurred_at, actor_kind,
  actor_token_id, dispatched_at, dispatch_attempts, next_attempt_at, actor_user_id,
  commitment_id, request_id, detail)
SELECT CASE c.status WHEN 'Completed' THEN 'completed' WHEN 'Active' THEN 'activated'
                     WHEN 'Refused' THEN 'refused' WHEN 'Withdrawn' THEN 'withdrawn'
                     ELSE 'handshake_requested' END,
       'Active', c.status, c.updated_at, 'user', NULL, c.updated_at + interval '1 second', 1,
       c.updated_at, c.assignee_id, c.id, '', '{}'
FROM commitments_commitment c ORDER BY c.updated_at;
INSERT INTO notifications_nudgedelivery (id, channel, status, attempts, next_attempt_at,
  claimed_until, enqueued_at, delivered_at, last_error, created_at, updated_at, event_id,
  recipient_id, counted_at, digest_id, is_digest, sender_id, address, reminder_id, coalesce_at,
  digest_reason)
SELECT md5('n' || o.id)::uuid, 'email', 'delivered', 1, o.occurred_at, NULL, o.occurred_at,
       o.occurred_at + interval '2 seconds', '', o.occurred_at, o.occurred_at, o.id,
       c.assigner_id, o.occurred_at, NULL, false, c.assignee_id, '', NULL, o.occurred_at, 'cap'
FROM commitments_outboxevent o JOIN commitments_commitment c ON c.id = o.commitment_id;
"""

# The planted due work, the same at every size: commitments `p1`.. of typical
# people, moved to "now" before each run (PLANT_NOW).
PLANT = """
INSERT INTO commitments_commitment (
  id, status, description, raw_text, deadline, external_system, external_id, created_at,
  updated_at, activated_at, completed_at, refused_at, renegotiated_at, withdrawn_at,
  assignee_id, assigner_id, terms_version, invitation_id, link_url)
SELECT md5('p' || j)::uuid,
       CASE WHEN j <= 2 * %(k)s THEN 'Active' ELSE 'Pending_Handshake' END,
       'Planted ' || j, NULL, NULL, NULL, NULL, now(), now(), now(), NULL, NULL, NULL, NULL,
       md5('u' || (2 + j %% 5))::uuid, md5('u' || (3 + j %% 5))::uuid, 1, NULL, NULL
FROM generate_series(1, 3 * %(k)s) j;
INSERT INTO commitments_outboxevent (kind, previous_status, new_status, occurred_at, actor_kind,
  dispatch_attempts, next_attempt_at, commitment_id, request_id, detail)
SELECT 'activated', 'Pending_Handshake', 'Active', now(), 'system', 0, now(),
       md5('p' || j)::uuid, 'planted', '{}'
FROM generate_series(1, %(k)s) j;
INSERT INTO notifications_nudgedelivery (id, channel, status, attempts, next_attempt_at,
  last_error, created_at, updated_at, event_id, recipient_id, is_digest, address,
  digest_reason)
SELECT md5('pn' || o.id)::uuid, 'email', 'pending', 0, now(), '', now(), now(), o.id,
       md5('u' || 2)::uuid, false, '', 'cap'
FROM commitments_outboxevent o WHERE o.request_id = 'planted';
"""

PLANT_NOW = """
UPDATE commitments_commitment c SET
  deadline = CASE WHEN p.j <= %(k)s THEN now() + interval '12 hours'
                  WHEN p.j <= 2 * %(k)s THEN now() - interval '12 hours' END,
  updated_at = CASE WHEN p.j > 2 * %(k)s THEN now() - interval '2 days 1 hour' ELSE now() END
FROM (SELECT j, md5('p' || j)::uuid AS id FROM generate_series(1, 3 * %(k)s) j) p
WHERE c.id = p.id;
UPDATE commitments_outboxevent SET dispatched_at = NULL,
  next_attempt_at = now() - interval '1 hour', occurred_at = now() - interval '1 hour'
WHERE request_id = 'planted';
UPDATE notifications_nudgedelivery SET status = 'pending', next_attempt_at = now(),
  enqueued_at = NULL WHERE id IN (
    SELECT md5('pn' || o.id)::uuid FROM commitments_outboxevent o WHERE o.request_id = 'planted');
"""


def fill_label(size: dict[str, int]) -> str:
    return "scale fill " + json.dumps(size, sort_keys=True)


def database_comment(admin_url: str, name: str) -> str | None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
            [name],
        ).fetchone()
    return row[0] if row else None


def fill(url: str, size: dict[str, int]) -> dict[str, float]:
    """Fill the migrated database at `url` in bulk; returns seconds per step."""
    steps: dict[str, float] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")  # no triggers, no FK checks
        conn.execute("SET maintenance_work_mem = '256MB'")
        conn.execute("SELECT setseed(0.29)")
        # Secondary indexes (not the constraints' own) are dropped and built
        # again after the rows are in: much faster than keeping them up.
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s)"
            " AND indexname NOT IN (SELECT conname FROM pg_constraint)",
            [list(FILLED)],
        ).fetchall()
        for name, _ in indexes:
            conn.execute(f'DROP INDEX "{name}"')
        (subject_type,) = conn.execute(
            "SELECT id FROM django_content_type WHERE app_label = 'commitments'"
            " AND model = 'commitment'"
        ).fetchone() or (None,)
        params = {**size, "heavy_email": HEAVY_EMAIL, "subject_type": subject_type}
        params |= {"per": AUDIT_PER_COMMITMENT, "k": PLANTED}
        for step, sql in (
            ("people", FILL_USERS),
            ("commitments", FILL_COMMITMENTS),
            ("audit", FILL_AUDIT),
            ("outbox and deliveries", FILL_OUTBOX),
            ("planted", PLANT),
        ):
            started = time.perf_counter()
            for statement in filter(str.strip, sql.split(";\n")):
                conn.execute(statement, params)
            steps[step] = time.perf_counter() - started
            log(f"filled {step} in {steps[step]:.1f} s")
        started = time.perf_counter()
        for _, definition in indexes:
            conn.execute(definition)
        steps["indexes"] = time.perf_counter() - started
        log(f"built {len(indexes)} indexes in {steps['indexes']:.1f} s")
        started = time.perf_counter()
        conn.execute("VACUUM ANALYZE")
        steps["vacuum analyze"] = time.perf_counter() - started
    return steps


def a_filled_database(size: dict[str, int], env: dict[str, str], reuse: bool) -> dict:
    url = env["DATABASE_URL"]
    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    label = fill_label(size)
    if reuse and database_comment(admin, name) == label:
        log(f"reusing {name}; applying any new migrations")
        started = time.perf_counter()
        run_checked([PYTHON, "manage.py", "migrate", "--noinput"], env)
        return {"reused": True, "migrate_s": round(time.perf_counter() - started, 1)}
    log(f"filling {name}: {size}")
    fresh_database(url, env)
    steps = fill(url, size)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"COMMENT ON DATABASE \"{name}\" IS '{label}'")
    return {"reused": False, "fill_s": {k: round(v, 1) for k, v in steps.items()}}


def outer(args: argparse.Namespace) -> None:
    """Each size in turn: a database of its own, filled (or reused), the
    planted work moved to now, the measurements in a process of their own;
    then both sizes side by side."""
    sizes = [args.baseline, args.commitments] if args.baseline else [args.commitments]
    sizes = sorted(set(sizes))
    folder = Path(tempfile.mkdtemp(prefix="scale-"))
    results: dict = {"at": now_iso(), "sizes": {}, "rounds": args.rounds}
    for n in sizes:
        env = a_sizes_environment(n, folder)
        size = shape(n)
        made = a_filled_database(size, env, args.reuse)
        counts = the_planted_work_now(env["DATABASE_URL"])
        results["sizes"][str(n)] = {
            "shape": size,
            "rows": counts,
            "database": made,
            "measurements": the_measurements(n, env, folder, args),
        }
    table = render(results, sizes)
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(results, indent=2) + "\n")
    print(table)
    print(f"\nResults (with every statement's plan summary): {out_path}")


def a_sizes_environment(n: int, folder: Path) -> dict[str, str]:
    """The service's environment on the size's own database (DATABASE_URL's
    name plus `_scale<n>`): mail kept in memory, warnings alone logged."""
    database_url, redis_url = own_database_and_redis(f"_scale{n}")
    env = service_env(database_url, redis_url, folder)
    env.update({"EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend"})
    env["LOG_JSON"], env["LOG_LEVEL"] = "0", "WARNING"
    # The admin asks staff for a second factor in production: a constant
    # of every admin page, left out here (the operator signs in by force).
    env["ADMIN_REQUIRES_MFA"] = "0"
    return env


def the_planted_work_now(database_url: str) -> dict[str, int]:
    """The planted due work moved to now (PLANT_NOW); the filled tables' rows."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        for statement in filter(str.strip, PLANT_NOW.split(";\n")):
            conn.execute(statement, {"k": PLANTED})
        return {
            table: conn.execute(COUNT.format(pgsql.Identifier(table))).fetchone()[0]  # type: ignore[index]
            for table in FILLED
        }


def the_measurements(n: int, env: dict[str, str], folder: Path, args: argparse.Namespace) -> dict:
    """This script again with --inner, in the size's environment: the
    measurements it wrote."""
    out = folder / f"inner-{n}.json"
    log(f"measuring at {n:,} commitments")
    inner_args = ["--inner", str(out), "--rounds", str(args.rounds), "--budget", str(args.budget)]
    inner_args += ["--only", args.only] if args.only else []
    subprocess.run(  # noqa: S603 (our own script)
        [PYTHON, "-m", "benchmarks.scale", *inner_args], env=env, cwd=ROOT, check=True
    )
    return json.loads(out.read_text())


def render(results: dict, sizes: list[int]) -> str:
    small, large = str(sizes[0]), str(sizes[-1])
    lines = []
    for n in sizes:
        rows = results["sizes"][str(n)]["rows"]
        lines.append(f"{n:>9,} commitments: " + ", ".join(f"{t} {c:,}" for t, c in rows.items()))
    head = f"{'measurement':24} {'user':8} {'ms@' + small:>9} {'ms@' + large:>10}"
    head += f" {'ratio':>6} {'q@' + small:>7} {'q@' + large:>8}  plans@{large}"
    lines += ["", head]
    failures = 0
    for key, big in results["sizes"][large]["measurements"].items():
        base = results["sizes"][small]["measurements"].get(key, big)
        ratio = big["ms"] / base["ms"] if base["ms"] else float("nan")
        flagged = sorted({f"{s['node']} on {s['table']}" for s in big["flagged"]})
        verdicts = []
        if len(sizes) > 1 and ratio > 2:
            verdicts.append("SLOW")
        if big["queries"] != base["queries"]:
            verdicts.append("QUERIES DIFFER")
        plans = "; ".join(flagged) if flagged else "ok"
        failures += bool(verdicts or flagged)
        name, user = big["name"], big["user"] or ""
        lines.append(
            f"{name:24} {user:8} {base['ms']:9.2f} {big['ms']:10.2f} {ratio:6.2f}"
            f" {base['queries']:7} {big['queries']:8}  {plans}"
            + (f"  <- {', '.join(verdicts)}" if verdicts else "")
        )
    lines.append("")
    lines.append(
        "goals: ratio <= 2, equal query counts, no sequential scan on a large table: "
        + ("met" if not failures else f"{failures} measurement(s) miss")
    )
    return "\n".join(lines)


# --- the measurements (in the service's settings, DEBUG=0) ------------------------------


# Nodes that pass rows on as they come: a scan below them and a Limit stops
# when the Limit has its rows.
STREAMING = {"Limit", "Subquery Scan", "Result", "Append"}


def plan_scans(plan: dict, *, bounded: bool = False) -> list[dict]:
    """Every node of a JSON plan that reads a relation, depth first; a scan
    with no filter under a Limit through streaming nodes only is `bounded`
    (it reads no more rows than the Limit keeps)."""
    found = []
    if "Relation Name" in plan:
        found.append(
            {
                "node": plan["Node Type"],
                "table": plan["Relation Name"],
                "index": plan.get("Index Name"),
                "rows": plan.get("Plan Rows"),
                "bounded": bounded and "Filter" not in plan,
            }
        )
    bounded = plan["Node Type"] == "Limit" or (bounded and plan["Node Type"] in STREAMING)
    for child in plan.get("Plans", []):
        found += plan_scans(child, bounded=bounded)
    return found


def flagged_scans(scans: list[dict], sizes: dict[str, float]) -> list[dict]:
    """The sequential scans that read a large table whole: one of
    LARGE_TABLES, holding more than 10,000 rows (PostgreSQL reads a small
    table whole by choice), and not bounded by a Limit."""
    return [
        scan
        for scan in scans
        if scan["node"] == "Seq Scan"
        and scan["table"] in LARGE_TABLES
        and sizes.get(scan["table"], 0) > 10_000
        and not scan["bounded"]
    ]


# One measurement: its name, whose calls (None: the operator's or the
# tasks'), and the call.
Measurement = tuple[str, str | None, Callable[[], None]]


def inner(args: argparse.Namespace) -> None:
    """The measurements at one size, in this process (the outer run gave it
    the size's database): the people and their clients, the calls a person
    makes, the admin's and the tasks', then each call measured and its
    statements' plans checked."""
    import django

    django.setup()
    static_files_unhashed()
    actors, staff = the_people()
    measurements = [call for who, actor in actors.items() for call in a_persons_calls(who, actor)]
    measurements += the_admins_calls(staff, some_subject=actors["typical"].commitment.pk)
    measurements += the_tasks()
    table_rows = large_table_rows()
    wanted = str(args.only or "").split(",")
    results: dict[str, dict] = {}
    for name, kind, call in measurements:
        if args.only and not any(part in f"{name}/{kind or ''}" for part in wanted):
            continue
        results[f"{name}/{kind or ''}"] = measured(name, kind, call, args, table_rows)
    Path(args.inner).write_text(json.dumps(results, indent=1, default=str))


def static_files_unhashed() -> None:
    """The pages' static URLs without a collectstatic run: production's
    manifest lookup is a dict's, the same at every size."""
    from django.conf import settings
    from django.test.utils import override_settings

    storages = dict(settings.STORAGES)
    storages["staticfiles"] = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
    override_settings(STORAGES=storages).enable()


class Actor:
    """A person of the fill, signed in (pages) and with a token (the API),
    with their commitments the calls open and complete."""

    def __init__(self, user: Any, partner: Any) -> None:
        from django.test import Client

        from commitments.models import Commitment, Status
        from integrations.services import api_token_mint

        self.user = user
        self.partner = partner  # whom their inbox call asks
        self.client = Client(HTTP_HOST="localhost")
        self.client.force_login(user)
        self.token = api_token_mint(user=user, name=f"scale {time.time():.0f}").plaintext
        self.api = Client(HTTP_HOST="localhost")
        mine = Commitment.objects.filter(assigner=user)
        # The newest Completed one they asked with a Jira reference: a
        # commitment page with a full timeline, the same kind at each size.
        done = mine.filter(status=Status.COMPLETED, external_system="jira")
        self.commitment = done.order_by("-created_at")[0]
        active = mine.filter(status=Status.ACTIVE, external_system="jira")
        self.to_complete = active.order_by("-created_at")[0]


def the_people() -> tuple[dict[str, Actor], Any]:
    """The heavy user and a typical one, and the operator's client (a
    superuser, made at the first run on a database)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from accounts.services import user_email_mark_verified

    users = get_user_model().objects
    heavy = users.get(email=HEAVY_EMAIL)
    typical = users.get(email=TYPICAL_EMAIL)
    other = users.get(email=OTHER_EMAIL)
    operator = users.filter(email="operator@scale.example").first()
    if operator is None:
        operator = users.create_superuser("operator@scale.example", "scale passphrase long enough")
        user_email_mark_verified(user=operator)
    actors = {"heavy": Actor(heavy, partner=other), "typical": Actor(typical, partner=other)}
    staff = Client(HTTP_HOST="localhost")
    staff.force_login(operator)
    return actors, staff


def page(client: Any, path: str) -> None:
    response = client.get(path)
    if response.status_code != 200:
        raise SystemExit(f"{path}: {response.status_code} {response.content[:300]!r}")


def api(actor: Actor, method: str, path: str, body: dict | None, expected: int) -> None:
    headers = {"Authorization": f"Bearer {actor.token}"}
    if method == "get":
        response = actor.api.get(path, headers=headers)
    else:
        response = actor.api.post(
            path, data=json.dumps(body), content_type="application/json", headers=headers
        )
    if response.status_code != expected:
        raise SystemExit(f"{path}: {response.status_code} {response.content[:300]!r}")


def rolled_back(call: Callable[[], object]) -> Callable[[], None]:
    """`call` in a transaction rolled back after it: every round does the
    same work and leaves nothing behind."""
    from django.db import transaction

    def run() -> None:
        with transaction.atomic():
            call()
            transaction.set_rollback(True)

    return run


def a_persons_calls(who: str, actor: Actor) -> list[Measurement]:
    """The Accord, its fragment, the dashboard, a commitment page, an inbox
    call, a completing sync and the read API's list, as `actor`."""
    c = actor.client
    inbox = {
        "assignerEmail": actor.user.email,
        "assigneeEmail": actor.partner.email,
        "description": "Scale: a new request",
        "deadline": "2030-03-01T17:00:00Z",
        "externalSystem": "jira",
        "externalId": "SCALE-NEW-1",
    }
    sync = {
        "externalSystem": "jira",
        "externalId": actor.to_complete.external_id,
        "status": "Completed",
    }
    return [
        ("accord", who, partial(page, c, "/")),
        ("accord fragment", who, partial(page, c, "/accord/fragment")),
        ("dashboard", who, partial(page, c, "/dashboard/")),
        ("commitment page", who, partial(page, c, f"/commitments/{actor.commitment.pk}/")),
        ("inbox", who, rolled_back(partial(api, actor, "post", "/api/v1/inbox", inbox, 201))),
        (
            "sync (complete)",
            who,
            rolled_back(partial(api, actor, "post", "/api/v1/sync", sync, 200)),
        ),
        ("api list", who, partial(api, actor, "get", "/api/v1/commitments?limit=50", None, 200)),
    ]


def the_admins_calls(staff: Any, some_subject: Any) -> list[Measurement]:
    """The admin's audit list as the operator: plain, filtered by action,
    by kind of actor, by the past 7 days, searched by a subject's id and by
    each shape of term the search reads."""
    from django.utils import timezone

    audit = "/admin/audit/auditevent/"
    # Aware bounds, as the admin's own "Past 7 days" link gives them.
    today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    tomorrow, week_ago = today + dt.timedelta(days=1), today - dt.timedelta(days=7)
    past_week = (
        urlencode({"occurred_at__gte": f"{week_ago:%Y-%m-%d %H:%M:%S%z}"})
        + "&"
        + urlencode({"occurred_at__lt": f"{tomorrow:%Y-%m-%d %H:%M:%S%z}"})
    )
    return [
        ("admin audit list", None, partial(page, staff, audit)),
        ("admin audit ?action", None, partial(page, staff, audit + "?action=completed")),
        ("admin audit ?actor_kind", None, partial(page, staff, audit + "?actor_kind=system")),
        ("admin audit ?past 7 days", None, partial(page, staff, audit + "?" + past_week)),
        ("admin audit ?q=subject id", None, partial(page, staff, audit + f"?q={some_subject}")),
        # The search reads a term by its shape (audit.admin): a whole address
        # (a typical person's events, and the heavy user's), a token's
        # prefix (none filled: an index probe that finds nothing), other text
        # (token names and addresses among the newest 10,000 events).
        ("admin audit ?q=e-mail", None, partial(page, staff, audit + "?q=" + TYPICAL_EMAIL)),
        ("admin audit ?q=e-mail heavy", None, partial(page, staff, audit + "?q=" + HEAVY_EMAIL)),
        ("admin audit ?q=token prefix", None, partial(page, staff, audit + "?q=svc_Ab3dE6gH")),
        ("admin audit ?q=other text", None, partial(page, staff, audit + "?q=person-00002")),
    ]


def the_tasks() -> list[Measurement]:
    """The outbox sweep and the reminders' run."""
    from django.utils import timezone

    from notifications.reminders import reminders_create_due
    from relay.outbox import outbox_sweep

    return [
        ("sweep", None, rolled_back(outbox_sweep)),
        ("reminders", None, rolled_back(lambda: reminders_create_due(now=timezone.now()))),
    ]


def large_table_rows() -> dict[str, float]:
    """PostgreSQL's estimate of each large table's rows."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, reltuples FROM pg_class WHERE relname = ANY(%s)", [list(LARGE_TABLES)]
        )
        return dict(cursor.fetchall())


def measured(
    name: str,
    kind: str | None,
    call: Callable[[], None],
    args: argparse.Namespace,
    table_rows: dict[str, float],
) -> dict:
    """One measurement: a warm-up (and the first look of the Accord), the
    statements of one call, the median of the timed rounds, each
    statement's plan."""
    call()
    statements = statements_of(call)
    times = timed(call, args.rounds, args.budget)
    plans, flagged = plans_of(statements, table_rows)
    log(f"{name} ({kind or '-'}): {statistics.median(times):.2f} ms, {len(statements)} queries")
    return {
        "name": name,
        "user": kind,
        "ms": statistics.median(times),
        "ms_all": [round(t, 2) for t in times],
        "queries": len(statements),
        "flagged": flagged,
        "plans": plans,
    }


def statements_of(call: Callable[[], None]) -> list[tuple[str, Any]]:
    """The SQL statements one call issues, savepoints left out."""
    from django.db import connection

    captured: list[tuple[str, Any]] = []

    def capture(execute, sql, params, many, context):
        captured.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        call()
    return [
        (sql, params)
        for sql, params in captured
        if not sql.lstrip().upper().startswith(("SAVEPOINT", "RELEASE", "ROLLBACK"))
    ]


def timed(call: Callable[[], None], rounds: int, budget: float) -> list[float]:
    """Milliseconds of `rounds` calls, at most `budget` s of them: a call
    that takes seconds is measured fewer times, not waited for a minute."""
    times: list[float] = []
    while len(times) < rounds and (not times or sum(times) < budget * 1000):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def plans_of(
    statements: list[tuple[str, Any]], table_rows: dict[str, float]
) -> tuple[list[dict], list[dict]]:
    """`EXPLAIN (FORMAT JSON)` of each statement that has a plan: its scans,
    and the flagged ones (flagged_scans) of them all."""
    from django.db import connection

    plans, flagged = [], []
    prepared = getattr(connection.features, "uses_server_side_binding", False)
    for sql, params in statements:
        if not sql.lstrip().upper().startswith(EXPLAINED):
            continue
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
            (plan,) = cursor.fetchone()
        scans = plan_scans(_json(plan)[0]["Plan"])
        bad = flagged_scans(scans, table_rows)
        entry: dict[str, Any] = {"sql": sql[:300], "scans": scans}
        if prepared:
            plan_prepared = prepared_plan(sql, params)
            if plan_prepared is None:
                entry["prepared_scans"] = None
            else:
                entry["prepared_scans"] = plan_scans(plan_prepared)
                bad += [
                    {**scan, "node": f"{scan['node']} (prepared)"}
                    for scan in flagged_scans(entry["prepared_scans"], table_rows)
                ]
        flagged += bad
        plans.append({**entry, "flagged": bool(bad)})
    return plans, flagged


def _json(plan: Any) -> Any:
    return json.loads(plan) if isinstance(plan, str) else plan


def prepared_plan(sql: str, params: Any) -> dict | None:
    """The plan PostgreSQL uses for the statement once it is prepared and has
    run five times (DB_PREPARED_STATEMENTS: a statement a connection runs
    twice is prepared; from its sixth run PostgreSQL keeps one generic plan
    for every value when that plan's estimated cost is no more than the ones
    it made for each run's values, and goes on planning each run otherwise):
    the statement prepared with its parameters numbered, and the sixth
    `EXPLAIN EXECUTE` of it with the call's values. None when PostgreSQL
    cannot tell a parameter's type from the text alone (psycopg sends the
    types)."""
    from django.db import connection, transaction
    from django.db.utils import DatabaseError

    numbered = iter(range(1, len(params or ()) + 1))
    text = re.sub(r"%(%|s)", lambda m: "%" if m.group(1) == "%" else f"${next(numbered)}", sql)
    values = list(params or ())
    explain = "EXPLAIN (FORMAT JSON) EXECUTE scale_prepared"
    if values:
        # The values as literals: EXECUTE, a utility statement, takes no parameters.
        explain += "(" + ", ".join(["%s"] * len(values)) + ")"
        explain = psycopg.ClientCursor(connection.connection).mogrify(explain, values)
    with connection.cursor() as cursor:
        # Untyped first, as a person would write it; else with the types
        # psycopg sends with the values (a CASE of parameters alone has none).
        for types in ("", _types(values)):
            if types is None:
                return None
            try:
                with transaction.atomic():
                    cursor.execute(f"PREPARE scale_prepared{types} AS {text}")
                break
            except DatabaseError:
                continue
        else:
            return None
        try:
            with transaction.atomic():
                for _ in range(6):  # EXPLAIN EXECUTE goes through the plan cache too
                    cursor.execute(explain)
                    (plan,) = cursor.fetchone()
        except DatabaseError:
            return None
        finally:
            cursor.execute("DEALLOCATE scale_prepared")
    return _json(plan)[0]["Plan"]


def _types(values: list[Any]) -> str | None:
    """`(type, ...)` of the values as psycopg sends them, or None when one
    goes without (a None, a string: PostgreSQL infers those)."""
    from django.db import connection
    from psycopg.adapt import PyFormat, Transformer

    transformer = Transformer(connection.connection)
    names = []
    for value in values:
        info = connection.connection.adapters.types.get(
            transformer.get_dumper(value, PyFormat.AUTO).oid
        )
        if info is None:
            return None
        names.append(info.name)
    return "(" + ", ".join(names) + ")" if names else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commitments", type=int, default=1_000_000)
    parser.add_argument(
        "--baseline",
        type=int,
        default=1_000,
        help="The size measured beside it (0: none, only --commitments).",
    )
    parser.add_argument("--rounds", type=int, default=7, help="Calls timed per measurement.")
    parser.add_argument(
        "--budget", type=float, default=10, help="Seconds of timed calls per measurement, at most."
    )
    parser.add_argument("--only", help="Measure these alone (parts of names, comma-separated).")
    parser.add_argument("--reuse", action="store_true", help="Reuse databases already filled.")
    parser.add_argument("--out", default=str(ROOT / "var" / "benchmarks" / "scale.json"))
    outer_or_inner(parser, outer, inner)


if __name__ == "__main__":
    main()
