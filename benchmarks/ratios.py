"""The request ratios in alternating rounds (`python -m benchmarks.run --parts
ratios`; docs/benchmarks.md): the bare floor, the inbox and a completing
sync, each measured for a short while in turn, round after round, with both
servers up, and each ratio taken against the bare floor of its own round.

A shared host's speed drifts: on the 2-vCPU machines of 2026-11-27 the bare
floor alone went from 988 to 530 requests a second within three minutes,
and the same run's ratios spread from 0.42 to 0.85. Measured one after the
other, minutes apart, each endpoint and the floor met different moments of
the machine. Here every round measures the three within a few seconds (the
order turned each round, so none is always first), and the figures are the
medians of the rounds' ratios, with their lowest and highest. Before the
rounds, each is called for a second, not counted: a gunicorn worker's first
calls compile what it keeps.

Both gunicorns run pinned to the server's core (the bare project's
benchmarks/bare/ and the service's, as the other parts start them); the one
not loaded sleeps. The syncs complete Active commitments made for this part
(`ratio-<n>`, fixtures.py's `--more`): `--ratio-syncs-per-second` (800) for
every second of sync load. A round whose sync used them up before its time
was over is left out of the figures, and said so.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from typing import Any

from benchmarks.harness import (
    ENDPOINTS,
    load,
    log,
    start_bare_floor,
)
from benchmarks.sustained import more_stage  # fixtures.py's --more

NAMES = ("bare", "inbox", "sync")
PREFIX = "ratio-"
WARM_UP = 1.0  # seconds of each before the rounds: every worker's first calls


def add_arguments(parser: Any) -> None:
    group = parser.add_argument_group("ratios (--parts ratios)")
    group.add_argument("--ratio-rounds", type=int, default=8, help="Rounds of the three.")
    group.add_argument(
        "--ratio-duration", type=float, default=3.0, help="Seconds of each measurement."
    )
    group.add_argument(
        "--ratio-concurrency", default="8,64", help="The closed-loop concurrencies, each its own."
    )
    group.add_argument(
        "--ratio-syncs-per-second",
        type=int,
        default=800,
        help="Active commitments made for each second of sync load.",
    )


def check_args(args: Any) -> None:
    if isinstance(args.ratio_concurrency, str):
        args.ratio_concurrency = [int(c) for c in args.ratio_concurrency.split(",")]
    if "ratios" in args.parts and (args.ratio_rounds < 1 or args.ratio_duration <= 0):
        raise SystemExit("--ratio-rounds must be at least 1 and --ratio-duration above 0")


def order(round_no: int) -> list[str]:
    """The three in the order of round `round_no`: turned by one each round."""
    k = round_no % len(NAMES)
    return [*NAMES[k:], *NAMES[:k]]


def syncs_needed(args: Any) -> int:
    seconds = args.ratio_rounds * len(args.ratio_concurrency) * args.ratio_duration + WARM_UP
    return math.ceil(seconds * args.ratio_syncs_per_second)


def spread(values: list[float]) -> dict:
    """The median of the rounds' ratios, with the lowest and highest."""
    if not values:
        return {"median": None, "low": None, "high": None, "rounds": 0}
    return {
        "median": round(statistics.median(values), 2),
        "low": round(min(values), 2),
        "high": round(max(values), 2),
        "rounds": len(values),
    }


def figures(rounds: list[dict]) -> dict:
    """From one concurrency's rounds ({name: a load result}, `used_up`):
    each endpoint's ratio to its round's bare floor, as `spread`, and the
    bare floor's own requests a second (how much the host moved)."""
    kept = [r for r in rounds if not r["used_up"]]
    out: dict[str, Any] = {
        "rounds": len(rounds),
        "left_out": len(rounds) - len(kept),
        "bare_rps": spread([r["bare"]["rps"] for r in kept]),
    }
    for name in ("inbox", "sync"):
        out[name] = spread(
            [r[name]["rps"] / r["bare"]["rps"] for r in kept if r["bare"]["rps"] > 0]
        )
    return out


def ratios(bench: Any) -> None:
    """The part: the bare floor's gunicorn started beside the service's, the
    syncs' commitments made, then the rounds at each concurrency."""
    args, ctx = bench.args, bench.ctx
    needed = syncs_needed(args)
    log(f"ratios: {needed} Active commitments for the syncs ({PREFIX}<n>)")
    more_stage(bench, active=needed, prefix=PREFIX)
    # Beside the service's gunicorn, on the same core.
    bare, bare_port = start_bare_floor(
        bench.folder,
        bench.env,
        workers=args.workers,
        cpu=args.server_cpu,
        name="gunicorn-bare-ratios",
    )
    try:
        ports = {"bare": bare_port, "inbox": ctx["port"], "sync": ctx["port"]}
        found = {}
        # Where each one's numbering goes on: the syncs' commitments are
        # theirs; the inbox's external ids go on from far past its other runs'.
        counters = {"bare": 0, "inbox": 10_000_000, "sync": 0}
        warm = args.ratio_concurrency[0]
        log(f"ratios: warm-up, each for {WARM_UP} s at c={warm} (not counted)")
        for name in NAMES:
            spec = _spec(args, ctx, name, ports[name], warm)
            spec["first"], spec["duration"] = counters[name], WARM_UP
            counters[name] = load(args.load_cpu, spec)["next"]
        for concurrency in args.ratio_concurrency:
            rounds = []
            for round_no in range(args.ratio_rounds):
                measured: dict[str, Any] = {}
                for name in order(round_no):
                    spec = _spec(args, ctx, name, ports[name], concurrency)
                    spec["first"] = counters[name]
                    if name == "sync":
                        spec["limit"] = needed - counters[name]
                    result = load(args.load_cpu, spec)
                    counters[name] = result["next"]
                    measured[name] = result
                measured["used_up"] = counters["sync"] >= needed
                rounds.append(measured)
                log(
                    f"ratios c={concurrency} round {round_no + 1}: "
                    + ", ".join(f"{n} {measured[n]['rps']}/s" for n in NAMES)
                )
            found[str(concurrency)] = {"figures": figures(rounds), "runs": rounds}
        bench.results["ratios"] = found
    finally:
        bare.stop_all()


def _spec(args: Any, ctx: dict, name: str, port: int, concurrency: int) -> dict:
    path, body, expect = ENDPOINTS["floor" if name == "bare" else name]
    if name == "sync":
        body = json.dumps(
            {"externalSystem": "bench", "externalId": PREFIX + "{n}", "status": "Completed"}
        )
    return {
        "port": port,
        "path": path,
        "headers": {"Authorization": f"Bearer {ctx['token']}", "Content-Type": "application/json"},
        "body": body,
        "expect": expect,
        "duration": args.ratio_duration,
        "concurrency": concurrency,
    }


def summary_lines(results: dict) -> list[str]:
    found = results.get("ratios")
    if not found:
        return []
    lines = []
    for concurrency, part in found.items():
        f = part["figures"]
        b = f["bare_rps"]
        left = f", {f['left_out']} left out (the syncs used up)" if f["left_out"] else ""
        lines.append(
            f"ratios c={concurrency}: {f['rounds']} rounds{left}; "
            f"bare {b['median']} req/s ({b['low']}-{b['high']})"
        )
        for name in ("inbox", "sync"):
            s = f[name]
            lines.append(
                f"  {name:<5} x bare: median {s['median']} ({s['low']}-{s['high']}, "
                f"{s['rounds']} rounds)"
            )
    return lines


def self_check() -> None:
    """`python -m benchmarks.ratios check`: the pure parts on made-up data.
    (The tests may not import the benchmarks: pyproject.toml.)"""
    assert [order(k) for k in range(4)] == [
        ["bare", "inbox", "sync"],
        ["inbox", "sync", "bare"],
        ["sync", "bare", "inbox"],
        ["bare", "inbox", "sync"],
    ]

    def run(bare: float, inbox: float, sync: float, used_up: bool = False) -> dict:
        return {
            "bare": {"rps": bare},
            "inbox": {"rps": inbox},
            "sync": {"rps": sync},
            "used_up": used_up,
        }

    out = figures([run(100, 50, 60), run(200, 120, 100), run(50, 20, 40), run(100, 1, 1, True)])
    assert out["left_out"] == 1 and out["rounds"] == 4
    assert out["inbox"] == {"median": 0.5, "low": 0.4, "high": 0.6, "rounds": 3}, out
    assert out["sync"] == {"median": 0.6, "low": 0.5, "high": 0.8, "rounds": 3}, out
    assert out["bare_rps"]["median"] == 100
    assert spread([])["median"] is None
    print("ratios: self-check passed")


if __name__ == "__main__":
    if sys.argv[1:] == ["check"]:
        self_check()
    else:
        raise SystemExit("usage: python -m benchmarks.ratios check (the part runs in run.py)")
