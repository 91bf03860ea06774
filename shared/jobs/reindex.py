"""Embedding jobs: ``embed`` (new or changed memories) and ``reindex``.

(backfill until none are pending), writing every vector tier through :class:`shared.engine.Engine`.

Resumable by construction: the work list is the ``needs_reindex`` flag, cleared per memory only
if the memory did not change while it was being embedded, so an interrupted reindex continues
where it stopped and a repeated one does nothing twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from shared.engine import Engine
from shared.jobs.context import JobContext
from shared.jobs.payloads import REINDEX, EmbedPayload, ReindexPayload
from shared.jobs.queue import JobQueue

REINDEX_BATCH = 256

Progress = Callable[[int, int], None]


async def start_reindex_if_needed(engine: Engine | None, queue: JobQueue) -> bool:
    """Prepare the vector table.

    Enqueue a reindex if it was (re)built for a new signature or if any memory still waits for its
    vectors. Returns whether a reindex was enqueued.

    The second case repairs memories whose ``embed`` job was lost: a worker killed between a
    learn job's write and its embed enqueue, or a job dropped after its retries. Called at
    start-up (gateway in embedded mode, worker) and by the worker's periodic check.

    Raises:
        StoreError: the database failed.
    """
    if engine is None:
        return False
    rebuilt = await engine.prepare()
    if not rebuilt and await engine.sqlite_vec.memories.count_pending_reindex() == 0:
        return False
    await queue.enqueue(REINDEX, ReindexPayload(requested_at=time.time()))
    return True


async def drop_vanished(jc: JobContext, engine: Engine, ids: list[int], use_qdrant: bool) -> int:
    """Delete the vectors just written for rowids ``ids`` whose memory was deleted meanwhile.

    (the delete trigger and the ``vector_delete`` job ran before the write landed); returns how
    many. Raises ``StoreError`` / ``VectorIndexError`` (the job retries).
    """
    still = await jc.store.memories.get_many(ids)
    gone = [i for i in ids if i not in still]
    if gone:
        await engine.sqlite_vec.delete(gone)
        if use_qdrant:
            await engine.delete(gone)
    return len(gone)


async def embed_memories(jc: JobContext, payload: EmbedPayload) -> dict[str, Any]:
    """Embed the given memories into the vector tiers (missing/deleted ids are skipped)."""
    engine = jc.engine
    if engine is None or not engine.enabled:
        return {"embedded": 0, "skipped": "no embedding source"}
    found = await jc.store.memories.get_many(payload.memory_ids)
    memories = [found[i] for i in payload.memory_ids if i in found]
    use_qdrant = jc.settings.vector_tier == "qdrant"
    rebuilt = await engine.index(memories, use_qdrant=use_qdrant)
    await drop_vanished(jc, engine, [m.id for m in memories], use_qdrant)
    await jc.store.writes.mark_indexed([(m.id, m.updated_at) for m in memories])
    if rebuilt and jc.queue is not None:
        await jc.queue.enqueue(REINDEX, ReindexPayload(requested_at=time.time()))
    return {"embedded": len(memories), "rebuilt": rebuilt}


async def reindex(
    jc: JobContext, payload: ReindexPayload, progress: Progress | None = None
) -> dict[str, Any]:
    """Embed every memory marked for reindex (all memories with ``force``) until none is left.

    ``progress(done, total)`` is called after each batch. Returns counts.
    """
    engine = jc.engine
    if engine is None or not engine.enabled:
        return {"embedded": 0, "skipped": "no embedding source"}
    if payload.force:
        await jc.store.writes.mark_all_for_reindex(payload.owner_id)
    use_qdrant = jc.settings.vector_tier == "qdrant"
    done = 0
    total = await jc.store.memories.count_pending_reindex()
    while True:
        cursor = 0
        progressed = False
        while True:
            batch = await jc.store.memories.pending_reindex(after_id=cursor, limit=REINDEX_BATCH)
            if not batch:
                break
            if await engine.index(batch, use_qdrant=use_qdrant):
                total = await jc.store.memories.count_pending_reindex()
            await drop_vanished(jc, engine, [m.id for m in batch], use_qdrant)
            await jc.store.writes.mark_indexed([(m.id, m.updated_at) for m in batch])
            cursor = batch[-1].id
            done += len(batch)
            progressed = True
            if progress is not None:
                progress(done, max(total, done))
        remaining = await jc.store.memories.count_pending_reindex()
        if remaining == 0 or not progressed:
            return {"embedded": done, "remaining": remaining}
        total = done + remaining
