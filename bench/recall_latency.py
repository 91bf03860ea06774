"""Recall latency at 1k .. 1M memories for one owner, on real chat text, through ``recall()``.

Usage::

    python bench/recall_latency.py [--sizes 1k,10k,100k[,1m]] [--queries 300] [--hybrid]
        [--no-cold] [--data-dir data]

Each size is a database under ``--data-dir`` (``data/`` is gitignored), built once through the
product's write path (``MemoryStore.upsert_many``) and reused: the caller owner holds N memories
(``bench/_corpus.py``: LoCoMo turns, varied so that every text is distinct), nine other owners
1,000 each. Queries are LoCoMo questions (distinct). For each size it prints:

* cold: time to answer the first query of an owner whose index is not cached (feed read, owner
  load, index build in a worker thread, search), median of 3 fresh engines, and the build's CPU
  time: ``rows`` with no stored snapshot (rows read and analysed), ``snap`` from the owner
  snapshot the previous load stored (once each above 100k memories), with the peak RSS so far;
* keyword: recall p50/p99 (wall) and CPU ms per query with a warm cache (``exact`` strategy);
* hybrid (``--hybrid``): the same with the static embedding table and sqlite-vec (vectors are
  written once, through the engine, on first use of the database);

* rss: the process's resident memory (MB) after the warm runs (in brackets: its growth since the
  store was opened; with ``--no-cold``, one warm engine as in a gateway), and the cache's estimate
  of the bytes its owner indexes hold (what ``MNEMOGATE_RECALL_CACHE_MB`` bounds);

then the growth of the keyword p50 and CPU per query from the smallest to the largest size (on a
shared machine the CPU figure is the steadier one).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from bench._corpus import memories, queries
from shared.engine import build_engine
from shared.models import NewMemory, Scope
from shared.retrieval import recall, retention_of
from shared.settings import Settings, load_settings
from shared.store import Store, recall_rows

STATIC_TABLE = Path(__file__).resolve().parents[1] / "data" / "models" / "minilm-static-256.npz"
"""The static embedding table (``mnemogate models build-static --out <this path>``)."""
CALLER = "caller"
OTHERS = 9
OTHER_SIZE = 1000
BIG = 100_000
"""Above this many memories each kind of cold load is measured once, not three times."""


def bench_settings(db: str, **overrides: object) -> Settings:
    """Product settings for a benchmark database (static table from :data:`STATIC_TABLE`)."""
    return load_settings({}, db_path=db, static_model_path=str(STATIC_TABLE), **overrides)


def parse_size(text: str) -> int:
    """``"10k"`` → 10000, ``"1m"`` → 1000000."""
    text = text.strip().lower()
    mult = {"k": 1000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("km")) * mult)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


async def seed(store: Store, n: int) -> None:
    """Write the caller's ``n`` memories and the other owners' through ``upsert_many``."""
    texts = memories(n)
    for i in range(0, n, 2000):
        batch = [NewMemory(owner_id=CALLER, content=t) for t in texts[i : i + 2000]]
        await store.writes.upsert_many(batch)
    other = memories(OTHER_SIZE, seed=99)
    for o in range(OTHERS):
        await store.writes.upsert_many([NewMemory(owner_id=f"other{o}", content=t) for t in other])


async def ensure_vectors(store: Store, settings: Settings) -> None:
    """Embed every memory still marked for indexing (static table) into sqlite-vec."""
    http = httpx.AsyncClient()
    engine = build_engine(settings, store, http, retention_of(settings))
    await engine.warm_up()
    after = 0
    while batch := await store.memories.pending_reindex(after_id=after, limit=2048):
        await engine.index(batch, use_qdrant=False)
        await store.writes.mark_indexed([(m.id, m.updated_at) for m in batch])
        after = batch[-1].id
    await http.aclose()


async def cold(
    store: Store, settings: Settings, query: str, *, rows: bool
) -> tuple[float, float, bool]:
    """Wall ms of the first recall of a fresh engine, CPU ms of its build, whether from a snapshot.

    ``rows``: drop the caller's snapshot first (the load reads and analyses its rows); the load
    stores a new snapshot, awaited before returning.
    """
    if rows:
        await recall_rows.drop_snapshot(store.writer, CALLER)
    http = httpx.AsyncClient()
    engine = build_engine(settings, store, http, retention_of(settings))
    start = time.perf_counter()
    await recall(store.memories, Scope(owner_id=CALLER), query, settings, time.time(), engine)
    wall = (time.perf_counter() - start) * 1000
    assert engine.keywords is not None
    index = engine.keywords.cache.owners[CALLER]
    await engine.keywords.cache.settle()
    await engine.keywords.close()
    await http.aclose()
    return wall, index.build_cpu_ms, index.from_snapshot


def rss_mb() -> float:
    """Resident set size of this process (MB, from ``/proc/self/status``; 0 elsewhere)."""
    try:
        with open("/proc/self/status") as f:
            line = next(x for x in f if x.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0.0
    return int(line.split()[1]) / 1024


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (MB; ``ru_maxrss``, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def warm(store: Store, settings: Settings, qs: list[str]) -> tuple[float, float, float, int]:
    """(p50 ms, p99 ms, CPU ms per query, cache bytes) of recall with a warm cache."""
    http = httpx.AsyncClient()
    engine = build_engine(settings, store, http, retention_of(settings))
    await engine.warm_up()
    scope = Scope(owner_id=CALLER)
    await recall(store.memories, scope, qs[0], settings, time.time(), engine)
    if engine.keywords is not None:  # warm: the load's background work (prepared features,
        await engine.keywords.cache.settle()  # the snapshot) is done before measuring
    lat: list[float] = []
    cpu0 = time.process_time()
    for q in qs:
        start = time.perf_counter()
        await recall(store.memories, scope, q, settings, time.time(), engine)
        lat.append((time.perf_counter() - start) * 1000)
    cpu = (time.process_time() - cpu0) * 1000 / len(qs)
    held = engine.keywords.cache.nbytes if engine.keywords is not None else 0
    if engine.keywords is not None:
        await engine.keywords.cache.settle()  # a snapshot write in flight finishes first
    await engine.close()
    await http.aclose()
    return pct(lat, 0.5), pct(lat, 0.99), cpu, held


async def run_size(n: int, args: argparse.Namespace, qs: list[str]) -> tuple[float, float]:
    db = os.path.join(args.data_dir, f"recall-{n}.db")
    fresh = not Path(db).exists()  # noqa: ASYNC240 (a benchmark, once per size)
    store = await Store.open(db)
    if fresh:
        t0 = time.perf_counter()
        await seed(store, n)
        print(f"  seeded {n:,} memories in {time.perf_counter() - t0:.1f} s", flush=True)
    # the cache budget must hold the owner (about 1.5 KB per memory, see the README)
    budget = max(512, n * 2 // 1000)
    keyword = bench_settings(
        db, embedding_source="none", retrieval_strategy="exact", recall_cache_mb=budget
    )
    line = f"{n:>9,} | cold"
    base = rss_mb()
    runs = 3 if n <= BIG else 1
    for rows in (True, False) if args.cold else ():
        colds = [await cold(store, keyword, qs[i], rows=rows) for i in range(runs)]
        kind = "snap" if all(c[2] for c in colds) else "rows" if rows else "snap(none)"
        line += (
            f" {kind} {pct([c[0] for c in colds], 0.5):7.1f} ms "
            f"(CPU {pct([c[1] for c in colds], 0.5):6.1f})"
        )
        print(f"  {line} [peak rss {peak_rss_mb():.0f} MB]", flush=True)
    p50, p99, cpu, held = await warm(store, keyword, qs)
    line += f" | keyword p50 {p50:6.2f} p99 {p99:6.2f} ms, CPU {cpu:5.2f} ms/q"
    if args.hybrid:
        hybrid = bench_settings(db, embedding_source="static", recall_cache_mb=budget)
        await ensure_vectors(store, hybrid)
        h50, h99, hcpu, _ = await warm(store, hybrid, qs)
        line += f" | hybrid static p50 {h50:6.2f} p99 {h99:6.2f} ms, CPU {hcpu:5.2f} ms/q"
    line += f" | rss {rss_mb():6.0f} MB (+{rss_mb() - base:.0f}), cache {held / 2**20:6.0f} MB"
    line += f", peak rss {peak_rss_mb():.0f} MB"
    print(line, flush=True)
    await store.close()
    return p50, cpu


async def main_async(args: argparse.Namespace) -> None:
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    os.makedirs(args.data_dir, exist_ok=True)
    qs = queries(args.queries)
    print(f"recall latency, {args.queries} distinct LoCoMo questions per size", flush=True)
    figures = [await run_size(n, args, qs) for n in sizes]
    if len(figures) > 1:
        (p0, c0), (p1, c1) = figures[0], figures[-1]
        print(
            f"keyword growth {sizes[0]:,} → {sizes[-1]:,}: p50 {p1 / p0:.2f}x, "
            f"CPU per query {c1 / c0:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1k,10k,100k")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--hybrid", action="store_true", help="also measure hybrid (static)")
    parser.add_argument(
        "--no-cold",
        dest="cold",
        action="store_false",
        help="skip the cold loads (then rss is that of one warm engine, as in a gateway)",
    )
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[1] / "data"))
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
