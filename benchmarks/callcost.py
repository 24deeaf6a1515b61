"""Where one API call's time goes: the server's side of a call, measured in
one process, with no load generator and no network between.

    python -m benchmarks.callcost                       # CPU and wall ms per call
    python -m benchmarks.callcost --cprofile inbox      # and where inbox's time goes

Each endpoint of benchmarks/run.py (the in-stack floor, the inbox, a
completing sync, a replay), and the read API's two (`get`: one commitment
with its history, the one the stage's captured inbox call made; `list`: a
page of 50 of the assigner's commitments), is called `--calls` times through
the WSGI handler gunicorn calls (Django's whole request handler and
middleware, its request signals with them: the connection's health check)
with the benchmark's settings (production's, DEBUG=0, PostgreSQL, Redis),
after `--warmup` calls. Beside it, in a second process, the bare floor
(benchmarks/bare/: the same call in a bare Django project, on the same
database) is called the same way. Printed per endpoint: CPU milliseconds per
call (its process's time on the CPU: Python, psycopg, the Redis client) and
wall milliseconds (plus waiting on PostgreSQL and Redis), and the ratio of
the bare floor's and the in-stack floor's CPU to it: the server-core cost
that the throughput ratios of benchmarks/run.py follow when the server's
core is the limit. The calls are interleaved in `--rounds` rounds, the bare
floor's among them, so that a machine's busier moments weigh on each alike.
Last, the access log: the CPU of one access line written by gunicorn's
logger with the service's settings (config/gunicorn.py), which every call
pays under gunicorn and the bare floor does not (`x bare+log`).

With `--cprofile NAME` the calls to NAME (an endpoint, `bare` or
`accesslog`) run again under cProfile on the process's CPU clock (the waits
on PostgreSQL and Redis left out; `--profile-clock wall` keeps them) and the
functions with the most cumulative time (`--sort tottime`: own time) are
printed.

Needs DATABASE_URL (PostgreSQL; the run makes its own database, the name
given plus `_profile`) and REDIS_URL. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import socket
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
    outer_or_inner,
    own_database_and_redis,
    service_env,
)

NAMES = ("floor", "inbox", "sync", "replay", "get", "list")
# The reads (GET, no body): their paths, `{id}` the stage's inbox commitment.
READS = {"get": "/api/v1/commitments/{id}", "list": "/api/v1/commitments?limit=50"}
BARE_SETTINGS = "benchmarks.bare.settings"


# --- the outer process: the stage, the two inner processes, the table -----------------


class Inner:
    """One inner process (the service's settings, or the bare project's),
    answering one JSON command a line."""

    def __init__(self, args: argparse.Namespace, ctx_file: Path, env: dict[str, str]) -> None:
        command = [PYTHON, "-m", "benchmarks.callcost", "--inner", str(ctx_file), *sys.argv[1:]]
        self.proc = subprocess.Popen(  # noqa: S603 (our own script)
            command, env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def ask(self, **command: object) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None  # pipes, above
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"The inner process ended (exit {self.proc.wait()}).")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.ask(do="quit")
        self.proc.wait(timeout=30)


def outer(args: argparse.Namespace) -> None:
    database_url, redis_url = own_database_and_redis("_profile")
    folder = Path(tempfile.mkdtemp(prefix="profile-"))
    env = service_env(database_url, redis_url, folder)
    env.update({"EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend"})
    fresh_database(database_url, env)
    calls = args.warmup + args.calls
    ctx = make_stage(
        env, active=calls * 2 + 10, completed=200, receiver_url="http://127.0.0.1:9/hook"
    )
    ctx_file = folder / "ctx.json"
    ctx_file.write_text(json.dumps(ctx))
    stack = Inner(args, ctx_file, env)
    bare = Inner(args, ctx_file, dict(env, DJANGO_SETTINGS_MODULE=BARE_SETTINGS))
    try:
        measure(args, stack, bare)
    finally:
        stack.close()
        bare.close()


def measure(args: argparse.Namespace, stack: Inner, bare: Inner) -> None:
    # name: (process, the endpoint it calls)
    calls = {"bare": (bare, "floor"), **{name: (stack, name) for name in NAMES}}
    for process, name in calls.values():
        process.ask(do="calls", name=name, count=args.warmup)
    # In rounds, each endpoint's share of the calls in turn, so that a machine
    # busier in one moment than the next weighs on every endpoint alike and
    # the ratios to the floors stay fair.
    spent = {name: [0.0, 0.0] for name in calls}
    per_round = max(1, args.calls // args.rounds)
    for _ in range(args.rounds):
        for name, (process, endpoint) in calls.items():
            done = process.ask(do="calls", name=endpoint, count=per_round)
            spent[name][0] += done["cpu"]
            spent[name][1] += done["wall"]
    n = per_round * args.rounds
    figures = {name: (cpu * 1000 / n, wall * 1000 / n) for name, (cpu, wall) in spent.items()}
    log_line = stack.ask(do="accesslog", count=args.calls * 10)["cpu"] * 1000 / (args.calls * 10)
    print(table(figures, log_line))
    if args.cprofile:
        if args.cprofile == "accesslog":
            stack.ask(do="profile", name="accesslog", count=args.calls * 10, top=args.top)
        else:
            process, endpoint = calls[args.cprofile]
            process.ask(do="profile", name=endpoint, count=args.calls, top=args.top)


def table(figures: dict[str, tuple[float, float]], log_line: float) -> str:
    bare_cpu, floor_cpu = figures["bare"][0], figures["floor"][0]
    lines = [
        f"{'call':10} {'cpu ms':>8} {'wall ms':>8} {'x bare':>7} {'x floor':>8} {'x bare+log':>11}"
    ]
    for name, (cpu, wall) in figures.items():
        in_stack = name != "bare"
        floor = f"{floor_cpu / cpu:8.2f}" if in_stack else f"{'':8}"
        with_log = f"{bare_cpu / (cpu + log_line):11.2f}" if in_stack else f"{'':11}"
        lines.append(f"{name:10} {cpu:8.2f} {wall:8.2f} {bare_cpu / cpu:7.2f} {floor} {with_log}")
    lines.append(
        f"{'access log':10} {log_line:8.3f} {'':8} CPU ms per line (config/gunicorn.py's "
        "logger), paid by every call above under gunicorn, not by the bare floor"
    )
    return "\n".join(lines)


# --- an inner process: calls through the WSGI handler, on command ---------------------


class Caller:
    """The calls, made as gunicorn makes them: a WSGI environ handed to the
    application, its body read and closed."""

    def __init__(self, ctx: dict) -> None:
        from django.core.handlers.wsgi import WSGIHandler

        self.ctx = ctx
        self.handler = WSGIHandler()
        self.counters = {name: 0 for name in NAMES}
        self.last_headers: list[tuple[str, str]] = []

    def wsgi(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        path_info, _, query = path.partition("?")
        environ = {
            "REQUEST_METHOD": method,
            "SCRIPT_NAME": "",
            "PATH_INFO": path_info,
            "QUERY_STRING": query,
            "RAW_URI": path,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "REMOTE_PORT": "50000",
            "HTTP_HOST": "localhost:8000",
            "HTTP_CONNECTION": "close",
            "HTTP_AUTHORIZATION": f"Bearer {self.ctx['token']}",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.multithread": False,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
        }
        if body:
            environ["CONTENT_TYPE"] = "application/json"
            environ["CONTENT_LENGTH"] = str(len(body))
        started: list[str] = []

        def start_response(status, headers, exc_info=None):
            started.append(status)
            self.last_headers = headers

        result = self.handler(environ, start_response)
        try:
            content = b"".join(result)
        finally:
            result.close()
        return int(started[0][:3]), content

    def call(self, name: str) -> None:
        if name in READS:
            path = READS[name].replace("{id}", self.ctx["inbox_commitment_id"])
            status, content = self.wsgi("GET", path)
            if status != 200:
                raise SystemExit(f"{name}: {status} {content[:300]!r}")
            if name == "list" and len(json.loads(content)["results"]) != 50:
                raise SystemExit("list: the stage has fewer than 50 commitments to page")
            return
        path, body, expected = ENDPOINTS[name]
        n = self.counters[name]
        self.counters[name] += 1
        data = body.replace("{n}", str(n)).replace("{m}", str(n % 200))
        status, content = self.wsgi("POST", path, data.encode())
        if status not in expected:
            raise SystemExit(f"{name}: {status} {content[:300]!r}")


class AccessLog:
    """gunicorn's logger with the service's settings (config/gunicorn.py),
    writing to /dev/null the line of one floor call: its request parsed by
    gunicorn's own parser, the response headers the call answered."""

    def __init__(self, response_headers: list[tuple[str, str]]) -> None:
        import importlib

        from gunicorn.config import Config
        from gunicorn.http import wsgi
        from gunicorn.http.parser import RequestParser

        cfg = Config()
        for key, value in vars(importlib.import_module("config.gunicorn")).items():
            if key in cfg.settings:
                cfg.set(key, value)
        # Its handlers write to the sys.stdout of the moment they are made.
        stdout, sys.stdout = sys.stdout, open(os.devnull, "w")  # noqa: SIM115 (kept open)
        try:
            self.logger = cfg.logger_class(cfg)
        finally:
            sys.stdout = stdout
        path = ENDPOINTS["floor"][0]
        raw = (
            f"POST {path} HTTP/1.1\r\nHost: localhost:8000\r\nConnection: close\r\n"
            "Authorization: Bearer svc_000000000000000000000000000000000000\r\n"
            "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        ).encode()
        self._ends = socket.socketpair()
        self._ends[0].sendall(raw)
        client, server = ("127.0.0.1", 50000), ("127.0.0.1", 8000)
        self.req = next(iter(RequestParser(cfg, self._ends[1], client)))
        self.resp, self.environ = wsgi.create(self.req, self._ends[1], client, server, cfg)
        self.resp.start_response("200 OK", response_headers)
        self.resp.sent = 64
        self.request_time = dt.timedelta(microseconds=1850)

    def write(self) -> None:
        self.logger.access(self.resp, self.req, self.environ, self.request_time)


def inner(args: argparse.Namespace) -> None:
    import cProfile
    import pstats

    import django

    # Replies go to the outer process on the real stdout; anything else
    # printed goes to stderr.
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr
    django.setup()
    caller = Caller(json.loads(Path(args.inner).read_text()))
    access_log: AccessLog | None = None

    def run(name: str, count: int) -> None:
        nonlocal access_log
        if name == "accesslog":
            if access_log is None:  # made once, before it is measured
                caller.call("floor")
                access_log = AccessLog(caller.last_headers)
                access_log.write()
            for _ in range(count):
                access_log.write()
        else:
            for _ in range(count):
                caller.call(name)

    for line in sys.stdin:
        command = json.loads(line)
        reply: dict[str, object] = {}
        if command["do"] == "quit":
            replies.write("{}\n")
            replies.flush()
            return
        if command["do"] in ("calls", "accesslog"):
            name = command.get("name", "accesslog")
            if name == "accesslog" and access_log is None:
                run(name, 0)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            run(name, command["count"])
            reply = {"cpu": time.process_time() - cpu0, "wall": time.perf_counter() - wall0}
        elif command["do"] == "profile":
            # The CPU clock: where the server's core goes, the waits on
            # PostgreSQL and Redis left out (`--profile-clock wall` keeps them).
            clock = time.process_time if args.profile_clock == "cpu" else time.perf_counter
            profiler = cProfile.Profile(clock)
            profiler.enable()
            run(command["name"], command["count"])
            profiler.disable()
            print(
                f"\ncProfile of {command['count']} {command['name']} calls "
                f"({args.profile_clock} time), by {args.sort} time:"
            )
            pstats.Stats(profiler, stream=sys.stderr).sort_stats(args.sort).print_stats(
                command["top"]
            )
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


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
    parser.add_argument(
        "--cprofile",
        choices=[*NAMES, "bare", "accesslog"],
        help="Profile this endpoint's calls (or the bare floor's, or the access log's lines).",
    )
    parser.add_argument("--top", type=int, default=45, help="Functions printed by --cprofile.")
    parser.add_argument(
        "--profile-clock",
        choices=["cpu", "wall"],
        default="cpu",
        help="--cprofile's clock: the process's CPU time (default) or the wall's.",
    )
    parser.add_argument(
        "--sort",
        choices=["cumulative", "tottime"],
        default="cumulative",
        help="--cprofile's order.",
    )
    outer_or_inner(parser, outer, inner)


if __name__ == "__main__":
    main()
