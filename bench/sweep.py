"""Sweep benchmark 100,000 memories, one sweep, throughput and peak RSS.

Usage: ``python bench/sweep.py [--rows 100000] [--expired-share 0.5] [--batch 1000]``.

The database is seeded in a child process (bulk ``executemany`` into ``memories``; the FTS5
triggers run as in production), so the peak RSS reported is the sweeping process's own: it should
stay flat as ``--rows`` grows, since the sweep holds one batch of rows at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shared.fts_query import index_text
from shared.lifecycle.sweep import sweep
from shared.settings import load_settings
from shared.store import Store

DAY = 86_400.0
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
]


def peak_rss_mib() -> float:
    """Peak resident set size of this process in MiB (Linux ``ru_maxrss`` is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def seed(db: str, rows: int, expired_share: float) -> None:
    """Insert ``rows`` memories; ``expired_share`` of them are episodic and 60 days unused."""
    store = await Store.open(db)
    rng = random.Random(7)
    now = time.time()
    chunk = 5000
    sql = (
        "INSERT INTO memories (public_id, owner_id, user_id, type, category, key, content, "
        "search_text, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
    )
    for start in range(0, rows, chunk):
        batch = []
        for i in range(start, min(rows, start + chunk)):
            content = f"memory {i}: " + " ".join(rng.choices(WORDS, k=12))
            old = rng.random() < expired_share
            created = now - (60 if old else 1) * DAY
            mtype = "episodic" if old or i % 2 else "factual"
            owner = f"key_{i % 50}"
            batch.append(
                (
                    f"mem_{i:024x}",
                    owner,
                    "",
                    mtype,
                    "turn",
                    f"k{i}",
                    content,
                    index_text(content, None),
                    created,
                    created,
                )
            )
        await store.writer.execute("BEGIN IMMEDIATE")
        await store.writer.executemany(sql, batch)
        await store.writer.execute("COMMIT")
    await store.close()


async def run_sweep(db: str, rows: int, batch: int) -> None:
    settings = load_settings({}, db_path=db, sweep_batch_size=batch, sweep_max_scan=rows + 1)
    store = await Store.open(db)
    rss_before = peak_rss_mib()
    t0 = time.perf_counter()
    report = await sweep(store, settings, time.time())
    elapsed = time.perf_counter() - t0
    left = await store.memories.count()
    await store.close()
    print(f"rows: {rows:,}  batch: {batch}  full pass: {report.full_pass}")
    scan_rate, delete_rate = report.scanned / elapsed, report.deleted / elapsed
    print(f"scanned: {report.scanned:,} rows in {elapsed:.2f} s = {scan_rate:,.0f} rows/s")
    print(f"deleted: {report.deleted:,} ({report.by_reason}) = {delete_rate:,.0f} deleted/s")
    print(f"left: {left:,} memories")
    print(f"peak RSS: {rss_before:.1f} MiB after open, {peak_rss_mib():.1f} MiB after the sweep")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--expired-share", type=float, default=0.5)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--seed-only", metavar="DB", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.seed_only:
        asyncio.run(seed(args.seed_only, args.rows, args.expired_share))
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.db")
        t0 = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--seed-only",
                db,
                "--rows",
                str(args.rows),
                "--expired-share",
                str(args.expired_share),
            ],
            check=True,
        )
        print(f"seeded {args.rows:,} memories in {time.perf_counter() - t0:.1f} s (child process)")
        asyncio.run(run_sweep(db, args.rows, args.batch))


if __name__ == "__main__":
    main()
