"""CPU per request of the request path's memory step (``recall_block``), in one process.

Usage::

    python bench/recall_block.py [--sizes 10k] [--queries 1500] [--rounds 3] [--data-dir data]
        [--source none|static] [--profile FILE]

The database is ``bench/gateway.py``'s (``gw-<N>-<source>.db`` under ``--data-dir``, built once
through the product's write path: the caller owner holds N memories of LoCoMo turns among 10 owners,
with ``static`` also their vectors), copied to a temporary file so the gateway benchmark's own
snapshots are untouched. One engine (``none``: keyword recall, ``exact``; ``static``: hybrid recall
with the static table of ``bench/recall_latency.py``, as the gateway's ``static`` configuration)
loads the owner and finishes its background work (snapshot, prepared lines); 300 warm-up queries
follow, then ``--queries`` distinct LoCoMo questions, none seen before, each through
:func:`shared.recall_flow.recall_block` exactly as a chat request makes it (recall, echo rules,
floor, budget, block lines, token estimate). Printed per round: process CPU ms per call
(``time.process_time``: the gateway's CPU without HTTP, upstream and client noise) and the share of
calls that produced a block. ``--profile FILE``: the measured rounds also run under cProfile,
whose statistics are written to FILE (read them with ``python -m pstats FILE``). Being one
process without a server, it is steadier than
``bench/gateway.py`` on a busy machine; to compare two versions, run this
file from a checkout of each, alternately.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from bench._corpus import queries
from bench.gateway import build_db
from bench.recall_latency import STATIC_TABLE, parse_size
from shared.engine import build_engine
from shared.models import Scope
from shared.recall_flow import recall_block
from shared.retrieval import retention_of
from shared.sensitive_patterns import build_detector
from shared.settings import load_settings
from shared.store import Store

WARM_UP = 300
"""Queries run (and not measured) after the owner is loaded."""


async def run(n: int, args: argparse.Namespace) -> None:
    """One size: build or reuse the database, then ``args.rounds`` measured rounds."""
    source = Path(args.data_dir) / f"gw-{n}-{args.source}.db"
    await build_db(source, n, args.source)
    tmp = tempfile.mkdtemp(prefix="recall-block-")
    db = os.path.join(tmp, "bench.db")
    shutil.copy(source, db)
    hybrid = args.source == "static"
    settings = load_settings(
        {},
        db_path=db,
        embedding_source=args.source,
        retrieval_strategy="hybrid" if hybrid else "exact",
        static_model_path=str(STATIC_TABLE),
    )
    store = await Store.open(db)
    http = httpx.AsyncClient()
    engine = build_engine(settings, store, http, retention_of(settings))
    try:
        rows = await store.reader.execute_fetchall(
            "SELECT owner_id FROM memories GROUP BY owner_id ORDER BY count(*) DESC LIMIT 1"
        )
        scope = Scope(owner_id=next(iter(rows))[0])
        assert engine.keywords is not None
        await engine.warm_up()  # the embedding source's probe (hybrid: else keyword-only)
        await engine.keywords.fresh()
        await engine.keywords.cache.owner(scope.owner_id)
        await engine.keywords.cache.settle()
        detector = build_detector(settings.sensitive_custom_patterns)
        qs = queries(WARM_UP + args.rounds * args.queries)
        now = time.time()
        for q in qs[:WARM_UP]:
            await recall_block(store, detector, settings, scope, q, now, engine)
        profiler = cProfile.Profile() if args.profile else None
        for r in range(args.rounds):
            batch = qs[WARM_UP + r * args.queries : WARM_UP + (r + 1) * args.queries]
            started, blocks = time.process_time(), 0
            if profiler is not None:
                profiler.enable()
            for q in batch:
                found = await recall_block(store, detector, settings, scope, q, now, engine)
                blocks += bool(found.block)
            if profiler is not None:
                profiler.disable()
            cpu = (time.process_time() - started) * 1000 / len(batch)
            print(
                f"recall_block @{n:,} round {r + 1}: {cpu:.3f} ms CPU per call "
                f"({len(batch)} queries, {blocks / len(batch):.0%} with a block)",
                flush=True,
            )
        if profiler is not None:
            profiler.dump_stats(args.profile)
    finally:
        await engine.close()
        await http.aclose()
        await store.close()
        shutil.rmtree(tmp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10k")
    parser.add_argument("--queries", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--source", choices=["none", "static"], default="none")
    parser.add_argument("--profile", default="", help="write cProfile statistics to this file")
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[1] / "data"))
    args = parser.parse_args()
    Path(args.data_dir).mkdir(parents=True, exist_ok=True)
    for size in args.sizes.split(","):
        asyncio.run(run(parse_size(size), args))


if __name__ == "__main__":
    main()
