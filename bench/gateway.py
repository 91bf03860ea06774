"""What users meet: mnemogate side by side with a bare pass-through, on real chat text.

Usage::

    python bench/gateway.py [--sizes 1k,10k,100k] [--configs off,keyword,static,minilm]
        [--quick] [--c1 N] [--c10 N] [--c50 N] [--data-dir data]
        [--routes chat,responses,messages] [--learn]

One run measures, in this order and on the same machine state: the fake upstream alone, a
minimal Starlette + uvicorn + aiohttp pass-through (``bench/_passthrough.py``) and mnemogate
(embedded mode) with memory off (``x-mnemogate-no-memory``), keyword recall (``exact``), hybrid
with the static table and hybrid with ONNX MiniLM, each at every size. Servers under test are
pinned to CPU 0 with ``taskset`` when it exists (the upstream and this client share the rest).

The calling key owns N memories among 10 owners (nine others hold 1,000 each), written through
the product's write path (``MemoryStore.upsert_many``, vectors through the engine) with LoCoMo
turns (``bench/_corpus.py``); databases are built once under ``--data-dir`` (gitignored) and
reused. Every request body is a distinct LoCoMo question; measured requests carry
``x-mnemogate-no-learn`` (learning off). Printed per configuration: added p50/p90/p99 at c=1
(latency minus the upstream alone), server CPU ms per request (``/proc``), req/s at c=10 and
c=50, p99 at c=50, the share of requests at c=50 that lost memory (the recall was cut:
``x-mnemogate-memory-degraded: recall_timeout`` or ``recall_error``) and the share answered from
the keyword leg alone (``vector_timeout``), peak RSS, and each as a ratio to the pass-through;
after the MiniLM row, the query embedding's CPU per query (``bench/embed_cost.py``, pinned the
same way) as a share of that configuration's CPU per request.

``--learn``: learning on for the measured requests (no ``x-mnemogate-no-learn``), on a copy of
each database made for the run: every request body is then a distinct LoCoMo turn (a statement
the gateway captures, embeds and indexes in the background, in-process) followed by a question,
so recall runs while the owner's memories change under it. The lost share then shows whether
writes make recall miss its budget (each write changes the recall caches that every later
request reads). In-process jobs run two at a time, so under load learning falls behind and
catches up afterwards: the CPU per request then includes the learning that ran after the c=10
phase's last response, until the gateway is idle (printed below the row).

``--routes chat,responses,messages`` (default ``chat``: the table above) instead measures, for each
configuration and size, the client formats side by side against the fake upstream alone on the
same route: added p50/p90 at c=1 for JSON and streamed requests and the time to the first content
delta, each as a ratio to the chat route's (``bench/_routes.py``); ``--c1`` sets the requests per
route, target and mode.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from bench._corpus import memories, queries
from bench._routes import ROUTES, Target, sample, table
from bench._servers import fake_upstream, free_port, process, wait_port
from bench.recall_latency import (
    OTHERS,
    STATIC_TABLE,
    bench_settings,
    ensure_vectors,
    parse_size,
    pct,
)
from shared.models import NewMemory
from shared.store import Store

CONFIGS = {
    "off": {"retrieval_strategy": "exact", "embedding_source": "none"},
    "keyword": {"retrieval_strategy": "exact", "embedding_source": "none"},
    "static": {"retrieval_strategy": "hybrid", "embedding_source": "static"},
    "minilm": {"retrieval_strategy": "hybrid", "embedding_source": "transformers"},
}
TICK = os.sysconf("SC_CLK_TCK")


def pinned(args: list[str]) -> list[str]:
    """``args`` under ``taskset -c 0`` when taskset exists (exec: same pid)."""
    return ["taskset", "-c", "0", *args] if shutil.which("taskset") else args


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def peak_rss_mb(pid: int) -> float:
    """Peak resident set size of ``pid`` in MiB (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _messages(text: str) -> list[dict[str, str]]:
    """The chat of one request: ``text``, or a told turn, a reply and a question (``--learn``).

    A ``--learn`` body is ``"<turn>\x00<question>"`` (:func:`learn_bodies`).
    """
    if "\x00" not in text:
        return [{"role": "user", "content": text}]
    turn, question = text.split("\x00", 1)
    return [
        {"role": "user", "content": turn},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": question},
    ]


def learn_bodies(qs: Iterator[str], n: int, seed: int) -> Iterator[str]:
    """Endless ``--learn`` bodies: a distinct LoCoMo-like turn (``memories``) and a question."""
    turns = memories(n, seed=seed)
    for turn in turns:
        yield f"{turn}\x00{next(qs)}"


async def fire(url: str, headers: dict[str, str], bodies: list[str], c: int) -> dict[str, float]:
    """Send ``bodies`` with ``c`` in flight: latencies (ms), wall seconds, lost-memory share.

    Lost: the recall was cut (``x-mnemogate-memory-degraded`` of the recall itself:
    ``recall_timeout``, ``recall_error``); ``keyword``: answered from the keyword leg alone after
    the vector leg missed its share of the budget (``vector_timeout``).
    """
    lat: list[float] = []
    lost = 0
    keyword_only = 0
    it = iter(bodies)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=c)) as session:

        async def worker() -> None:
            nonlocal lost, keyword_only
            for text in it:
                body = json.dumps({"model": "fake-model", "messages": _messages(text)})
                t = time.perf_counter()
                async with session.post(url, data=body, headers=headers) as resp:
                    await resp.read()
                    degraded = resp.headers.get("x-mnemogate-memory-degraded", "")
                    if degraded.startswith("recall_"):
                        lost += 1
                    elif degraded == "vector_timeout":
                        keyword_only += 1
                lat.append((time.perf_counter() - t) * 1000)

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(c)))
        wall = time.perf_counter() - start
    n = max(1, len(bodies))
    return {"lat": lat, "wall": wall, "lost": lost / n, "keyword": keyword_only / n}  # type: ignore[dict-item]


async def settled(pid: int, timeout_s: float = 300.0) -> float:
    """Wait until ``pid`` is idle (under 2 % of a core over 0.5 s); returns the seconds waited.

    With learning on, in-process jobs deferred under load run after the last response: their
    CPU belongs to the requests that queued them.
    """
    start = time.perf_counter()
    last = cpu_s(pid)
    while time.perf_counter() - start < timeout_s:
        await asyncio.sleep(0.5)
        now = cpu_s(pid)
        if now - last < 0.01:
            return time.perf_counter() - start
        last = now
    return time.perf_counter() - start


async def measure(
    url: str,
    headers: dict[str, str],
    pid: int | None,
    n: dict[str, int],
    qs: Iterator[str],
    learn: bool = False,
) -> dict[str, float]:
    """The figures of one server (see the module docstring)."""
    take = lambda k: [next(qs) for _ in range(k)]  # noqa: E731
    await fire(url, headers, take(20), 4)  # warm-up: connections, caches, cold owner load
    if pid:  # and its background work (a cold owner's preparation, a snapshot write)
        await settled(pid)
    one = await fire(url, headers, take(n["c1"]), 1)
    if learn and pid:
        await settled(pid)
    cpu0 = cpu_s(pid) if pid else 0.0
    ten = await fire(url, headers, take(n["c10"]), 10)
    drain = await settled(pid) if learn and pid else 0.0  # the learning deferred under load
    cpu = (cpu_s(pid) - cpu0) * 1000 / n["c10"] if pid else 0.0
    fifty = await fire(url, headers, take(n["c50"]), 50)
    lat1 = one["lat"]  # type: ignore[index]
    return {
        "p50": pct(lat1, 0.5),
        "p90": pct(lat1, 0.9),
        "p99": pct(lat1, 0.99),  # type: ignore[arg-type]
        "cpu": cpu,
        "rps10": n["c10"] / ten["wall"],
        "rps50": n["c50"] / fifty["wall"],
        "p99c10": pct(ten["lat"], 0.99),  # type: ignore[arg-type]
        "p99c50": pct(fifty["lat"], 0.99),  # type: ignore[arg-type]
        "lost": fifty["lost"],
        "keyword": fifty["keyword"],
        "rss": peak_rss_mb(pid) if pid else 0.0,
        "drain": drain,
    }


async def build_db(path: Path, n: int, source: str) -> str:
    """Create (once) the database of one size and embedding source; returns the key secret."""
    secret_file = path.with_suffix(".secret")
    if path.exists() and secret_file.exists():  # noqa: ASYNC240 (once per database)
        return secret_file.read_text().strip()
    from bench._corpus import memories

    store = await Store.open(str(path))
    key, secret = await store.keys.create("bench")
    texts = memories(n)
    for i in range(0, n, 2000):
        await store.writes.upsert_many(
            [NewMemory(owner_id=key.id, content=t) for t in texts[i : i + 2000]]
        )
    other = memories(1000, seed=99)
    for o in range(OTHERS):
        await store.writes.upsert_many([NewMemory(owner_id=f"other{o}", content=t) for t in other])
    if source != "none":
        await ensure_vectors(store, bench_settings(str(path), embedding_source=source))
    await store.close()
    secret_file.write_text(secret)
    return secret


@contextlib.contextmanager
def server(args: list[str], env: dict[str, str], port: int) -> Iterator[int]:
    with process(pinned(args), env) as proc:
        wait_port(port, timeout_s=180)
        yield proc.pid


def row(name: str, m: dict[str, float], base: dict[str, float], up: float) -> str:
    def r(key: str) -> str:
        return f"({m[key] / base[key]:.2f}x)" if base.get(key) else ""

    added = {k: m[k] - up for k in ("p50", "p90", "p99")}
    base_added = base["p50"] - up
    ratio = f"({added['p50'] / base_added:.1f}x)" if base_added > 0 else ""
    return (
        f"{name:<22} +{added['p50']:6.2f}{ratio:>8} +{added['p90']:6.2f} +{added['p99']:7.2f} | "
        f"{m['cpu']:6.2f} {r('cpu'):>8} | {m['rps10']:7.0f} {r('rps10'):>8} | "
        f"{m['rps50']:7.0f} | {m['p99c10']:7.1f} {r('p99c10'):>8} | {m['p99c50']:7.1f} | "
        f"{m['lost'] * 100:5.1f}% {m['keyword'] * 100:5.1f}% | {m['rss']:6.0f} MB"
    )


def gateway_env(name: str, db: Path, upstream: str) -> dict[str, str]:
    """Environment of a ``mnemogate serve`` of configuration ``name`` on ``db``."""
    env = {f"MNEMOGATE_{k.upper()}": v for k, v in CONFIGS[name].items()}
    return env | {
        "MNEMOGATE_STATIC_MODEL_PATH": str(STATIC_TABLE),
        "MNEMOGATE_DB_PATH": str(db),
        "MNEMOGATE_UPSTREAM_BASE_URL": upstream,
        "MNEMOGATE_UPSTREAM_API_KEY": "sk-bench",
    }


async def routes_async(args: argparse.Namespace) -> None:
    """``--routes``: the client formats side by side, per configuration (``bench/_routes.py``)."""
    routes = [ROUTES[r] for r in args.routes.split(",")]
    if routes[0].name != "chat":
        raise SystemExit("--routes must start with chat (the reference of every ratio)")
    data = Path(args.data_dir)
    data.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    configs = args.configs.split(",")
    qs = iter(queries((10 + args.c1) * len(routes) * 4 * len(sizes) * len(configs)))
    with fake_upstream() as upstream, tempfile.TemporaryDirectory() as tmp:
        providers = Path(tmp) / "providers.toml"
        providers.write_text(
            f'[[providers]]\nname = "claude"\nkind = "anthropic"\nbase_url = "{upstream}"\n'
            'api_key_env = "MNEMOGATE_BENCH_CLAUDE_KEY"\n'
        )
        print(
            f"requests per route and target: {args.c1} JSON + {args.c1} streamed, c=1, interleaved"
        )
        for size in sizes:
            for name in configs:
                source = CONFIGS[name]["embedding_source"]
                db = data / f"gw-{size}-{source}.db"
                secret = await build_db(db, size, source)
                env = gateway_env(name, db, upstream) | {
                    "MNEMOGATE_PROVIDERS_FILE": str(providers),
                    "MNEMOGATE_BENCH_CLAUDE_KEY": "sk-bench",
                }
                port = free_port()
                cmd = [sys.executable, "-m", "services.cli", "serve", "--port", str(port)]
                targets = [
                    Target(upstream, "sk-bench", gateway=False),
                    Target(f"http://127.0.0.1:{port}/v1", secret, gateway=True),
                ]
                with server(cmd, env, port):
                    await sample(targets, routes, qs, 10)  # warm-up
                    s = await sample(targets, routes, qs, args.c1)
                print("\n".join(table(f"{name} @{size:,}", s, routes)), flush=True)


async def main_async(args: argparse.Namespace) -> None:
    if args.routes != "chat":
        await routes_async(args)
        return
    n = {"c1": args.c1, "c10": args.c10, "c50": args.c50}
    total = sum(n.values()) + 20
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    configs = args.configs.split(",")
    data = Path(args.data_dir)
    data.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240
    qs = iter(queries(total * (2 + len(sizes) * len(configs))))
    with fake_upstream() as upstream:
        up = await measure(upstream + "/chat/completions", {}, None, n, qs)
        port = free_port()
        cmd = [sys.executable, "bench/_passthrough.py", "--port", str(port), "--upstream", upstream]
        with server(cmd, {}, port) as pid:
            base = await measure(f"http://127.0.0.1:{port}/v1/chat/completions", {}, pid, n, qs)
        print(
            f"requests: c1 {n['c1']}, c10 {n['c10']}, c50 {n['c50']} (distinct bodies); "
            f"taskset: {bool(shutil.which('taskset'))}; upstream alone p50 {up['p50']:.2f} ms"
        )
        print(
            f"{'configuration':<22} {'added p50/p90/p99 @c1 ms':>34} | {'CPU ms/req':>15} | "
            f"{'req/s c10':>16} | {'c50':>7} | {'p99 c10':>16} | {'p99 c50':>7} | "
            "lost  kw-only | RSS"
        )
        print(row("pass-through", base, base, up["p50"]))
        for size in sizes:
            for name in configs:
                source = CONFIGS[name]["embedding_source"]
                db = data / f"gw-{size}-{source}.db"
                secret = await build_db(db, size, source)
                headers = {
                    "authorization": f"Bearer {secret}",
                    "content-type": "application/json",
                }
                if not args.learn:
                    headers["x-mnemogate-no-learn"] = "true"
                if name == "off":
                    headers["x-mnemogate-no-memory"] = "true"
                with tempfile.TemporaryDirectory(dir=data) as tmp:
                    if args.learn:  # the run's writes go to a copy: the cached database stays
                        db = Path(shutil.copy(db, Path(tmp) / db.name))
                    bodies = learn_bodies(qs, total, seed=size) if args.learn else qs
                    env = gateway_env(name, db, upstream)
                    port = free_port()
                    cmd = [sys.executable, "-m", "services.cli", "serve", "--port", str(port)]
                    with server(cmd, env, port) as pid:
                        m = await measure(
                            f"http://127.0.0.1:{port}/v1/chat/completions",
                            headers,
                            pid,
                            n,
                            bodies,
                            learn=args.learn,
                        )
                label = f"{name}{'+learn' if args.learn else ''} @{size:,}"
                print(row(label, m, base, up["p50"]), flush=True)
                if args.learn:
                    print(
                        f"{'':<22} learning deferred at c=10 ran {m['drain']:.1f} s after the last "
                        "response (its CPU counted above)",
                        flush=True,
                    )
                if name == "minilm" and m["cpu"] > 0:
                    print(embedding_share(m["cpu"]), flush=True)


def embedding_share(cpu_ms: float) -> str:
    """The MiniLM query embedding's CPU per query as a share of its configuration's ``cpu_ms``.

    Measured by ``bench/embed_cost.py``, pinned like the gateway.
    """
    out = subprocess.run(
        pinned([sys.executable, str(Path(__file__).with_name("embed_cost.py"))]),
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    ms = float(out.stdout.split()[-1])
    return (
        f"{'':<22} query embedding (MiniLM, one question per call): {ms:.2f} ms CPU = "
        f"{100 * ms / cpu_ms:.0f} % of the configuration's CPU per request"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1k,10k,100k")
    parser.add_argument("--configs", default="off,keyword,static,minilm")
    parser.add_argument("--quick", action="store_true", help="fewer requests (100/300/500)")
    parser.add_argument("--c1", type=int, default=300)
    parser.add_argument("--c10", type=int, default=1000)
    parser.add_argument("--c50", type=int, default=1000)
    parser.add_argument(
        "--routes", default="chat", help="e.g. chat,responses,messages: formats side by side"
    )
    parser.add_argument(
        "--learn", action="store_true", help="learning on (on a copy of each database)"
    )
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[1] / "data"))
    args = parser.parse_args()
    if args.quick:
        args.c1, args.c10, args.c50 = 100, 300, 500
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
