"""CLI commands of the vector tier: ``reindex``, ``models build-static``, ``qdrant recreate``.

Kept apart from :mod:`services.cli` (one concept per module); ``cli`` registers them.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from shared.embedding.static import DEFAULT_FILE_NAME, build_static_table
from shared.engine import default_model_dir
from shared.jobs.payloads import ReindexPayload
from shared.jobs.reindex import reindex
from shared.jobs.vector_sync import OnDeleted, deletion_hook
from shared.runtime import Runtime, in_process_queue, open_runtime
from shared.settings import Settings


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``reindex``, ``models`` and ``qdrant`` on the top-level subparsers."""
    p = sub.add_parser("reindex", help="embed every memory waiting for a vector (resumable)")
    p.add_argument("--force", action="store_true", help="re-embed every memory")
    models = sub.add_parser("models", help="local embedding models")
    msub = models.add_subparsers(dest="models_command", required=True)
    build = msub.add_parser("build-static", help="distil the static embedding table (offline)")
    build.add_argument("--out", default=None, help="output .npz (default: <db folder>/models/)")
    build.add_argument("--dim", type=int, default=256)
    qdrant = sub.add_parser("qdrant", help="Qdrant vector tier")
    qsub = qdrant.add_subparsers(dest="qdrant_command", required=True)
    qsub.add_parser("recreate", help="drop and recreate the collection, then re-embed into it")


@asynccontextmanager
async def lifecycle_runtime(settings: Settings) -> AsyncIterator[tuple[Runtime, OnDeleted | None]]:
    """The runtime and Qdrant ``on_deleted`` hook of the lifecycle commands (sweep, summarize).

    The hook removes deleted memories' points from Qdrant (None when Qdrant is not the vector
    tier).

    A Qdrant failure parks ``vector_delete`` jobs in the SQLite outbox (the gateway or worker
    relays them to Redis and a worker retries them); the runtime is closed on exit.
    """
    runtime = await open_runtime(settings, in_process_queue)
    try:
        hook = (
            deletion_hook(runtime.engine, outbox=runtime.store.outbox)
            if settings.vector_tier == "qdrant"
            else None
        )
        yield runtime, hook
    finally:
        await runtime.close()


def _progress(done: int, total: int) -> None:
    width = 30
    filled = int(width * done / total) if total else width
    bar = "#" * filled + "." * (width - filled)
    print(f"\rreindex [{bar}] {done}/{total}", end="", file=sys.stderr, flush=True)


async def run_reindex(settings: Settings, force: bool) -> int:
    """Embed pending memories until none are left; prints progress on stderr, counts on stdout."""
    runtime = await open_runtime(settings, in_process_queue)
    jc = runtime.jobs
    try:
        if not jc.engine.enabled:
            print("no embedding source configured: nothing to index (keyword recall only)")
            return 1
        await jc.engine.warm_up()  # a remote source learns its dimension here
        if await jc.engine.prepare():
            print("embedding signature changed: vector table rebuilt, every memory re-embedded")
        t0 = time.perf_counter()
        result = await reindex(
            jc, ReindexPayload(force=force, requested_at=time.time()), progress=_progress
        )
        print(file=sys.stderr)
        print(
            f"reindex: embedded {result['embedded']} memories in "
            f"{time.perf_counter() - t0:.1f} s; {result['remaining']} still pending; "
            f"vectors stored: {await jc.engine.sqlite_vec.count()}"
        )
        return 0 if result["remaining"] == 0 else 1
    finally:
        await runtime.close()


async def run_qdrant_recreate(settings: Settings) -> int:
    """Drop and recreate the Qdrant collection for the current embedding, then re-embed all."""
    runtime = await open_runtime(settings, in_process_queue)
    try:
        engine = runtime.engine
        if engine.qdrant is None or engine.embedder is None:
            print(
                "qdrant is not the selected vector tier (MNEMOGATE_VECTOR_TIER=qdrant) or no "
                "embedding source is configured",
                file=sys.stderr,
            )
            return 1
        probe = await engine.embed_query("dimension probe")
        signature = engine.sqlite_vec.full_signature(engine.embedder.signature)
        await engine.qdrant.recreate(int(probe.shape[0]), signature)  # type: ignore[attr-defined]
        print(f"recreated collection {settings.qdrant_collection} ({signature})")
    finally:
        await runtime.close()
    return await run_reindex(settings, force=True)


def run_build_static(settings: Settings, out: str | None, dim: int) -> int:
    """Build the static embedding table; prints where it went."""
    path = Path(out) if out else default_model_dir(settings.db_path) / DEFAULT_FILE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)

    def progress(done: int, total: int) -> None:
        print(f"\rbuild-static {done}/{total}", end="", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    build_static_table(path, dim=dim, progress=progress)
    print(file=sys.stderr)
    print(f"static table written to {path} in {time.perf_counter() - t0:.1f} s")
    return 0
