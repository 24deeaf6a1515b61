"""Measure the commitment page and the dashboard at 10 and 1,000 commitments:
server time per request (median of 20) and SQL queries per request.

    DATABASE_URL=... .venv/bin/python scripts/measure_pages.py

Works in one transaction on the configured database and rolls it back, so
nothing is left behind (run `manage.py migrate` first). Speed is measured
here, never asserted by tests; the tests assert the query counts.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# A measurement on this machine, in development mode as the tests run (DEBUG
# is off unless set, and then needs a real SECRET_KEY).
os.environ.setdefault("DEBUG", "1")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from audit.services import Actor  # noqa: E402
from commitments import services  # noqa: E402
from tests.harness.commitments import many_commitments  # noqa: E402


class Rollback(Exception):
    pass


def measure(client: Client, path: str, runs: int = 20) -> tuple[float, int]:
    client.get(path)  # warm caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        response = client.get(path)
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, (path, response.status_code)
    with CaptureQueriesContext(connection) as queries:
        client.get(path)
    return statistics.median(times) * 1000, len(queries)


def main() -> None:
    settings.ALLOWED_HOSTS = ["*"]
    users = get_user_model().objects
    print(f"database: {connection.vendor}")
    for n in (10, 1000):
        try:
            with transaction.atomic():
                tag = uuid.uuid4().hex[:8]
                lead = users.create_user(f"lead-{tag}@example.com", "x", display_name="Lead")
                knight = users.create_user(f"knight-{tag}@example.com", "x", display_name="Knight")
                many_commitments(lead, knight, n)
                one = services.commitment_create_pending(
                    actor=Actor.for_user(lead),
                    assigner=lead,
                    assignee=knight,
                    description="The one",
                    deadline=None,
                )
                client = Client()
                for who in (lead, knight):
                    client.force_login(who)
                    for path in ("/dashboard/", f"/commitments/{one.pk}"):
                        ms, queries = measure(client, path)
                        print(
                            f"{n:>5} commitments  {who.name:<6} {path[:24]:<24} "
                            f"{ms:7.1f} ms  {queries:>2} queries"
                        )
                raise Rollback
        except Rollback:
            pass


if __name__ == "__main__":
    main()
