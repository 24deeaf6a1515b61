"""The load generator: asyncio on raw sockets, one HTTP/1.1 request per
connection (gunicorn's sync workers close every connection after answering).

Run by benchmarks/run.py as its own process, pinned with `taskset` to another
core than the server. Reads a job (JSON) from argv[1], prints the result
(JSON) on stdout.

- closed loop (`"rate": null`): `concurrency` clients, each sends its next
  request when the last answered; throughput is whatever the server gives.
- open loop (`"rate": r`): requests are sent on a fixed schedule, r a second,
  whatever the answers do (at most `max_in_flight` at once); a request's
  latency counts from when it was due, so a stall shows as latency and is
  not hidden by the clients waiting (coordinated omission).

Every request's body is `body` with the text `{n}` replaced by a counter
(start at `first`), so each inbox call has its own external id, and `{m}` by
the counter modulo `modulo` (the replay cycles through its commitments). `limit`
caps the requests (e.g. as many as there are commitments to complete).

`cpu_busy` in the result is the share of the wall time this process spent on
the CPU: near 1.0 it would be the bottleneck, and the figures would be its.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time


def percentile(sorted_values: list[float], p: float) -> float | None:
    if not sorted_values:
        return None
    k = min(len(sorted_values) - 1, max(0, round(p / 100 * len(sorted_values) + 0.5) - 1))
    return sorted_values[k]


class Job:
    def __init__(self, spec: dict) -> None:
        self.host = spec.get("host", "127.0.0.1")
        self.port = int(spec["port"])
        self.path = spec["path"]
        self.method = spec.get("method", "POST")
        self.headers = spec.get("headers", {})
        self.body = spec.get("body", "")
        self.expect = set(spec.get("expect", [200]))
        self.concurrency = int(spec.get("concurrency", 1))
        self.rate = spec.get("rate")
        self.duration = float(spec.get("duration", 5))
        self.first = int(spec.get("first", 0))
        self.limit = spec.get("limit")
        self.modulo = spec.get("modulo")
        self.timeout = float(spec.get("timeout", 30))
        self.max_in_flight = int(spec.get("max_in_flight", 512))
        self.counter = self.first
        self.latencies: list[float] = []
        self.statuses: dict[str, int] = {}
        self.errors = 0

    def next_request(self) -> bytes | None:
        n = self.counter
        if self.limit is not None and n - self.first >= self.limit:
            return None
        self.counter += 1
        m = n % self.modulo if self.modulo else n
        body = self.body.replace("{n}", str(n)).replace("{m}", str(m)).encode()
        lines = [
            f"{self.method} {self.path} HTTP/1.1",
            f"Host: localhost:{self.port}",
            "Connection: close",
            f"Content-Length: {len(body)}",
        ]
        lines += [f"{k}: {v}" for k, v in self.headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body

    async def send(self, request: bytes) -> int:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            if length:
                await reader.readexactly(length)
            return status
        finally:
            writer.close()

    async def timed(self, request: bytes, started: float) -> None:
        try:
            status = await asyncio.wait_for(self.send(request), self.timeout)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
            key = "failed"
            self.errors += 1
        else:
            key = str(status)
            if status not in self.expect:
                self.errors += 1
        self.statuses[key] = self.statuses.get(key, 0) + 1
        self.latencies.append(time.perf_counter() - started)

    async def closed_loop(self, end: float) -> None:
        async def client() -> None:
            while time.perf_counter() < end:
                request = self.next_request()
                if request is None:
                    return
                await self.timed(request, time.perf_counter())

        await asyncio.gather(*(client() for _ in range(self.concurrency)))

    async def open_loop(self, start: float, end: float) -> None:
        assert self.rate  # an open loop has a rate
        interval = 1.0 / float(self.rate)
        slots = asyncio.Semaphore(self.max_in_flight)
        tasks = set()
        i = 0
        while True:
            due = start + i * interval
            if due >= end:
                break
            next_request = self.next_request()
            if next_request is None:
                break
            request: bytes = next_request
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            await slots.acquire()  # a full window: the wait counts as latency

            async def run(request: bytes = request, due: float = due) -> None:
                try:
                    await self.timed(request, due)
                finally:
                    slots.release()

            task = asyncio.create_task(run())
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            i += 1
        if tasks:
            await asyncio.gather(*tasks)

    async def run(self) -> dict:
        cpu0, start = time.process_time(), time.perf_counter()
        end = start + self.duration
        if self.rate:
            await self.open_loop(start, end)
        else:
            await self.closed_loop(end)
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu0
        latencies = sorted(self.latencies)
        done = len(latencies)
        return {
            "mode": "open" if self.rate else "closed",
            "concurrency": None if self.rate else self.concurrency,
            "rate": self.rate,
            "requests": done,
            "errors": self.errors,
            "statuses": self.statuses,
            "seconds": round(wall, 3),
            "rps": round(done / wall, 1) if wall else 0.0,
            "p50_ms": _ms(percentile(latencies, 50)),
            "p99_ms": _ms(percentile(latencies, 99)),
            "max_ms": _ms(latencies[-1] if latencies else None),
            "cpu_busy": round(cpu / wall, 2) if wall else 0.0,
            "next": self.counter,
        }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


def main() -> None:
    spec = json.loads(sys.argv[1])
    print(json.dumps(asyncio.run(Job(spec).run())))


if __name__ == "__main__":
    main()
