"""CPU per query embedding of a local embedding source, one query at a time, as recall embeds.

Usage::

    python bench/embed_cost.py [--source transformers|static] [--queries 200]
        [--static-path data/models/minilm-static-256.npz]

Embeds distinct LoCoMo questions (``bench/_corpus.py``) one per call through the product's own
source (``shared.embedding.select.select_source``, no cache), after 10 warm-up calls, and prints
``<source> <ms>`` : process CPU milliseconds (all threads) per query. ``bench/gateway.py`` runs it
under the same ``taskset`` pinning as the gateway to report the query embedding's share of the
MiniLM configuration's CPU per request.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._corpus import queries
from shared.embedding.select import select_source


async def cost(source_kind: str, n: int, static_path: str | None) -> float:
    """Process CPU ms per ``embed([query])`` call over ``n`` distinct questions."""
    source = select_source(source_kind, static_path=static_path)
    if source is None:
        raise SystemExit(f"embedding source {source_kind} is unavailable")
    qs = queries(n + 10)
    for q in qs[:10]:
        await source.embed([q])
    start = time.process_time()
    for q in qs[10:]:
        await source.embed([q])
    return (time.process_time() - start) * 1000 / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default="transformers", choices=["transformers", "static"])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--static-path", default=None)
    args = parser.parse_args()
    ms = asyncio.run(cost(args.source, args.queries, args.static_path))
    print(f"{args.source} {ms:.3f}")


if __name__ == "__main__":
    main()
