"""Gateway overhead: latency through mnemogate vs calling the fake upstream directly.

Usage: ``python bench/overhead.py [--requests N] [--client aiohttp|httpx]``

Starts a fake upstream and a gateway (embedded mode, SQLite in a temp dir) as subprocesses on
127.0.0.1, then sends the same chat request N times at concurrency 1 and 10 to (a) the upstream
directly, (b) the gateway with memory off (``x-mnemogate-no-memory``), (c) the gateway with memory
on (recall + learning jobs), interleaving rounds so machine noise hits all alike. Prints p50/p99
latency in ms and the ratio gateway/direct, and throughput (req/s).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from bench._servers import create_key, fake_upstream, gateway

BODY = {
    "model": "fake-model",
    "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What editor do I prefer for TypeScript work?"},
    ],
}


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of ``values`` by nearest rank, in the values' unit."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def load(
    url: str, headers: dict[str, str], n: int, concurrency: int
) -> tuple[list[float], float]:
    """Send ``n`` requests with ``concurrency`` in flight; returns (latencies ms, wall seconds)."""
    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(n):
            queue.put_nowait(i)

        async def worker() -> None:
            while not queue.empty():
                queue.get_nowait()
                t0 = time.perf_counter()
                async with session.post(url, json=BODY, headers=headers) as resp:
                    await resp.read()
                    if resp.status != 200:
                        raise RuntimeError(f"{url}: HTTP {resp.status}")
                latencies.append((time.perf_counter() - t0) * 1000)

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return latencies, time.perf_counter() - start


async def run(n: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, fake_upstream() as up:
        db = str(Path(tmp) / "bench.db")
        secret = create_key(db)
        with gateway(db, up) as gw:
            auth = {"authorization": f"Bearer {secret}"}
            targets = {
                "direct": (up + "/chat/completions", {}),
                "gateway, memory off": (
                    gw + "/v1/chat/completions",
                    {**auth, "x-mnemogate-no-memory": "1"},
                ),
                "gateway, memory on": (gw + "/v1/chat/completions", auth),
            }
            for url, h in targets.values():  # warm-up
                await load(url, h, 50, 5)
            print(f"requests per cell: {n * rounds} ({rounds} interleaved rounds of {n})")
            print(
                f"{'target':<22} {'conc':>4} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8} "
                f"{'p50 x':>7} {'p99 x':>7}"
            )
            for conc in (1, 10):
                lat: dict[str, list[float]] = {k: [] for k in targets}
                wall: dict[str, float] = {k: 0.0 for k in targets}
                for _ in range(rounds):
                    for name, (url, h) in targets.items():
                        values, seconds = await load(url, h, n, conc)
                        lat[name].extend(values)
                        wall[name] += seconds
                base50, base99 = pct(lat["direct"], 0.5), pct(lat["direct"], 0.99)
                for name in targets:
                    p50, p99 = pct(lat[name], 0.5), pct(lat[name], 0.99)
                    rps = len(lat[name]) / wall[name]
                    print(
                        f"{name:<22} {conc:>4} {p50:>8.2f} {p99:>8.2f} {rps:>8.0f} "
                        f"{p50 / base50:>7.2f} {p99 / base99:>7.2f}"
                    )
                added = statistics.median(lat["gateway, memory on"]) - statistics.median(
                    lat["direct"]
                )
                print(f"  added median latency at c={conc}, memory on: {added:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per round and cell")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.requests, args.rounds))


if __name__ == "__main__":
    main()
