"""Where one API call's time goes: the server's side of a call, measured in
one process, with no load generator and no network between.

    python -m benchmarks.callcost                       # CPU and wall ms per call
    python -m benchmarks.callcost --cprofile inbox      # and where inbox's time goes

Each endpoint of benchmarks/run.py (the floor, the inbox, a completing sync, a
replay), and the read API's two (`get`: one commitment with its history, the
one the stage's captured inbox call made; `list`: a page of 50 of the
assigner's commitments), is called `--calls` times through Django's full request handler and
middleware (django.test.Client) with the benchmark's settings (production's,
DEBUG=0, PostgreSQL, Redis), after `--warmup` calls. Printed per endpoint:
CPU milliseconds per call (this process's time on the CPU: Python, psycopg,
the Redis client) and wall milliseconds (plus waiting on PostgreSQL and
Redis), the endpoints' calls interleaved in `--rounds` rounds so that a
machine's busier moments weigh on each alike, and the CPU ratio to the
floor: the server-core cost that the throughput ratios of benchmarks/run.py
follow when the server's core is the limit. With `--cprofile NAME` the calls
to NAME run again under cProfile and the functions with the most cumulative
time are printed.

Needs DATABASE_URL (PostgreSQL; the run makes its own database, the name
given plus `_profile`) and REDIS_URL. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __name__ == "__main__" and not __package__:
    # Run as a script, benchmarks/ is the first entry of sys.path.
    from harness import reexec_as_module  # type: ignore[import-not-found]

    reexec_as_module("benchmarks.callcost")

from benchmarks.harness import (
    ENDPOINTS,
    PYTHON,
    ROOT,
    fresh_database,
    make_stage,
    own_database_and_redis,
    service_env,
)

NAMES = ("floor", "inbox", "sync", "replay", "get", "list")
# The reads (GET, no body): their paths, `{id}` the stage's inbox commitment.
READS = {"get": "/api/v1/commitments/{id}", "list": "/api/v1/commitments?limit=50"}


def outer(args: argparse.Namespace) -> None:
    database_url, redis_url = own_database_and_redis("_profile")
    folder = Path(tempfile.mkdtemp(prefix="profile-"))
    env = service_env(database_url, redis_url, folder)
    env.update({"EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend", "LOG_JSON": "0"})
    fresh_database(database_url, env)
    calls = args.warmup + args.calls
    ctx = make_stage(
        env, active=calls * 2 + 10, completed=200, receiver_url="http://127.0.0.1:9/hook"
    )
    ctx_file = folder / "ctx.json"
    ctx_file.write_text(json.dumps(ctx))
    inner = [PYTHON, "-m", "benchmarks.callcost", "--inner", str(ctx_file), *sys.argv[1:]]
    subprocess.run(inner, env=env, cwd=ROOT, check=True)  # noqa: S603 (our own script)


def inner(args: argparse.Namespace) -> None:
    import cProfile
    import pstats

    import django

    django.setup()
    from django.test import Client

    ctx = json.loads(Path(args.inner).read_text())
    client = Client(HTTP_HOST="localhost")
    headers = {"Authorization": f"Bearer {ctx['token']}"}
    counters = {name: 0 for name in NAMES}

    def call(name: str) -> None:
        if name in READS:
            path = READS[name].replace("{id}", ctx["inbox_commitment_id"])
            response = client.get(path, headers=headers)
            if response.status_code != 200:
                raise SystemExit(f"{name}: {response.status_code} {response.content[:300]!r}")
            if name == "list" and len(response.json()["results"]) != 50:
                raise SystemExit("list: the stage has fewer than 50 commitments to page")
            return
        path, body, expected = ENDPOINTS[name]
        n = counters[name]
        counters[name] += 1
        data = body.replace("{n}", str(n)).replace("{m}", str(n % 200))
        response = client.post(path, data=data, content_type="application/json", headers=headers)
        if response.status_code not in expected:
            raise SystemExit(f"{name}: {response.status_code} {response.content[:300]!r}")

    for name in NAMES:
        for _ in range(args.warmup):
            call(name)
    # In rounds, each endpoint's share of the calls in turn, so that a machine
    # busier in one moment than the next weighs on every endpoint alike and
    # the ratios to the floor stay fair.
    spent = {name: [0.0, 0.0] for name in NAMES}
    per_round = max(1, args.calls // args.rounds)
    for _ in range(args.rounds):
        for name in NAMES:
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for _ in range(per_round):
                call(name)
            spent[name][0] += time.process_time() - cpu0
            spent[name][1] += time.perf_counter() - wall0
    calls = per_round * args.rounds
    figures = {
        name: (cpu * 1000 / calls, wall * 1000 / calls) for name, (cpu, wall) in spent.items()
    }
    floor_cpu = figures["floor"][0]
    print(f"{'call':8} {'cpu ms':>8} {'wall ms':>8} {'floor/cpu':>10}")
    for name, (cpu, wall) in figures.items():
        print(f"{name:8} {cpu:8.2f} {wall:8.2f} {floor_cpu / cpu:10.2f}")
    if args.cprofile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.calls):
            call(args.cprofile)
        profiler.disable()
        print(f"\ncProfile of {args.calls} {args.cprofile} calls, by cumulative time:")
        stats = pstats.Stats(profiler).sort_stats("cumulative")
        stats.print_stats(args.top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument(
        "--rounds",
        type=int,
        default=10,
        help="Interleave the endpoints' calls in this many rounds.",
    )
    parser.add_argument("--cprofile", choices=NAMES, help="Profile this endpoint's calls.")
    parser.add_argument("--top", type=int, default=45, help="Functions printed by --cprofile.")
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        inner(args)
    else:
        outer(args)


if __name__ == "__main__":
    main()
