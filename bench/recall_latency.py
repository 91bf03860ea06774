"""Keyword recall latency against store size: one owner with 1k, 10k and 100k memories.

Usage: ``python bench/recall_latency.py [--sizes 1000,10000,100000] [--queries 300]``

For each size N a fresh SQLite database holds N memories of the queried owner plus N more spread
over 9 other owners (10 owners in all, 2N rows), written through the store's own SQL with the
FTS5 triggers. Texts are synthetic sentences over a 5,000-word vocabulary with Zipf-distributed
word frequencies (s = 1.1), like natural text. Each query (3-8 words from the same distribution
plus stop words) runs through ``shared.retrieval.recall`` with the keyword strategy, i.e. query
building, FTS5 MATCH + bm25, visibility filter, floor, ordering and budget walk. Prints p50/p99
latency per size and the growth ratio against the smallest size.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sqlean

from shared.fts_query import index_text
from shared.models import Scope
from shared.retrieval import recall
from shared.settings import load_settings
from shared.store import Store

VOCAB = 5000
STOP = ["the", "a", "my", "is", "what", "do", "I", "with", "for"]


def make_words(rng: random.Random) -> tuple[list[str], list[float]]:
    syllables = ["ka", "lo", "mi", "ren", "to", "sa", "vi", "nor", "el", "dan", "qu", "pe"]
    words = sorted(
        {"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(VOCAB * 2)}
    )[:VOCAB]
    weights = [1.0 / (i + 1) ** 1.1 for i in range(len(words))]
    return words, weights


def sentence(rng: random.Random, words: list[str], weights: list[float], n: int) -> str:
    return " ".join(rng.choices(words, weights, k=n))


def seed(path: str, n: int, rng: random.Random, words: list[str], weights: list[float]) -> None:
    """Write the queried owner's N rows and N rows over 9 other owners in one transaction."""
    conn = sqlean.connect(path)
    now = time.time()
    rows = []
    for i in range(2 * n):
        owner = "owner-0" if i < n else f"owner-{1 + i % 9}"
        content = "User " + sentence(rng, words, weights, rng.randint(6, 18))
        key = f"k{i}"
        rows.append(
            (
                f"mem_{i}",
                owner,
                "semantic",
                "fact",
                key,
                content,
                index_text(content, key),
                now,
                now,
            )
        )
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO memories (public_id, owner_id, type, category, key, content, search_text, "
        "created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)",
        rows,
    )
    conn.execute("COMMIT")
    conn.close()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(path: str, queries: list[str]) -> list[float]:
    store = await Store.open(path)
    settings = load_settings({}, db_path=path, retrieval_strategy="exact", embedding_source="none")
    scope = Scope(owner_id="owner-0")
    for q in queries[:20]:  # warm the page cache
        await recall(store.memories, scope, q, settings, time.time())
    out = []
    for q in queries:
        t0 = time.perf_counter()
        await recall(store.memories, scope, q, settings, time.time())
        out.append((time.perf_counter() - t0) * 1000)
    await store.close()
    return out


async def main_async(sizes: list[int], n_queries: int) -> None:
    rng = random.Random(7)
    words, weights = make_words(rng)
    queries = [
        " ".join(rng.sample(STOP, 2) + rng.choices(words, weights, k=rng.randint(3, 8)))
        for _ in range(n_queries)
    ]
    base = None
    print(
        f"{'memories (owner)':>17} {'rows total':>10} {'seed s':>7} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'p50 x':>6}"
    )
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bench.db")
            store = await Store.open(path)  # migrate
            await store.close()
            t0 = time.perf_counter()
            seed(path, n, rng, words, weights)
            seeded = time.perf_counter() - t0
            lat = await measure(path, queries)
        p50 = pct(lat, 0.5)
        base = base or p50
        print(
            f"{n:>17,} {2 * n:>10,} {seeded:>7.1f} {p50:>8.2f} {pct(lat, 0.99):>8.2f} "
            f"{p50 / base:>6.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(main_async([int(s) for s in args.sizes.split(",")], args.queries))


if __name__ == "__main__":
    main()
