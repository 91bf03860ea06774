"""Keeping the Qdrant tier in step with memory deletions.

Deleting a memory by any path leaves no row in FTS, sqlite-vec or Qdrant (see "Lifecycle" in
``docs/ARCHITECTURE.md``).

sqlite-vec needs nothing from here: its rows go with the memory row (the ``memories_vec_delete``
trigger, and :meth:`shared.store.memories.lifecycle.LifecycleStore.evict`). Qdrant lives outside
SQLite, so every delete path hands the deleted rowids to it:

- request-path deletes (REST delete / bulk delete, MCP delete / clear) enqueue a
  ``vector_delete`` job (:func:`enqueue_vector_delete`); the shared handler
  (:func:`delete_vectors`) runs in the worker, or in-process in embedded mode, and a transient
  Qdrant failure raises :class:`~shared.errors.VectorIndexError`, retried by the job machinery
  (:mod:`shared.jobs.handlers`) and dead-lettered — never dropped silently — after
  ``job_max_tries``;
- deletes that already run in a job or a CLI command (sweep, capacity eviction, summarize) pass
  :func:`deletion_hook` as their ``on_deleted``: it deletes at once and, if Qdrant fails,
  hands the rowids to a ``vector_delete`` job (queue, or the SQLite outbox from the CLI).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from shared.errors import VectorIndexError
from shared.jobs.payloads import (
    VECTOR_DELETE,
    VectorDeletePayload,
    encode_payload,
    job_id_for,
)

if TYPE_CHECKING:
    from shared.engine import Engine
    from shared.jobs.context import JobContext
    from shared.jobs.queue import JobQueue
    from shared.store.outbox import OutboxStore

log = logging.getLogger("mnemogate.jobs")

#: rowids per ``vector_delete`` job (one Qdrant ``points/delete`` call each; a bulk delete of
#: 100k memories becomes 100 jobs, each small enough to retry cheaply)
VECTOR_DELETE_BATCH = 1000

OnDeleted = Callable[[list[int]], Awaitable[None]]


def vector_delete_payloads(ids: Sequence[int], now: float) -> list[VectorDeletePayload]:
    """Split rowids ``ids`` into ``vector_delete`` payloads.

    ``ids`` are deduplicated and sorted; each payload holds at most :data:`VECTOR_DELETE_BATCH`,
    all stamped ``requested_at=now`` (unix seconds).
    """
    unique = sorted({int(i) for i in ids})
    return [
        VectorDeletePayload(
            memory_ids=unique[start : start + VECTOR_DELETE_BATCH], requested_at=now
        )
        for start in range(0, len(unique), VECTOR_DELETE_BATCH)
    ]


async def enqueue_vector_delete(
    queue: JobQueue | None, ids: Sequence[int], now: float | None = None
) -> list[str]:
    """Queue ``vector_delete`` jobs for the deleted rowids ``ids``; returns their job ids.

    No queue or no ids → nothing (``[]``). Never raises for a queue outage (the arq queue parks
    jobs in the outbox).
    """
    if queue is None or not ids:
        return []
    stamp = time.time() if now is None else now
    return [await queue.enqueue(VECTOR_DELETE, p) for p in vector_delete_payloads(ids, stamp)]


async def delete_vectors(jc: JobContext, payload: VectorDeletePayload) -> dict[str, Any]:
    """The ``vector_delete`` handler: remove the Qdrant points of ``payload.memory_ids``.

    Rowids that belong to a live memory again (SQLite reuses the largest rowid after a delete)
    are skipped: that memory's point is written by its own ``embed`` job. Without a Qdrant tier
    in this process the job does nothing. Returns ``{"deleted": n, "skipped_live": n}`` (or
    ``{"deleted": 0, "skipped": reason}``).

    Raises:
        VectorIndexError: Qdrant failed or timed out (the runner retries the job).
        StoreError: the liveness check failed (retried too).
    """
    engine = jc.engine
    if engine is None or engine.qdrant is None:
        return {"deleted": 0, "skipped": "qdrant is not the vector tier"}
    live = await jc.store.memories.get_many(payload.memory_ids)
    gone = [i for i in payload.memory_ids if i not in live]
    await engine.delete(gone)
    return {"deleted": len(gone), "skipped_live": len(payload.memory_ids) - len(gone)}


def deletion_hook(
    engine: Engine | None,
    *,
    queue: JobQueue | None = None,
    outbox: OutboxStore | None = None,
) -> OnDeleted | None:
    """The ``on_deleted`` hook for the sweep and summarize: Qdrant points follow the rowids.

    Returns None when ``engine`` has no Qdrant tier (sqlite-vec rows need no hook). The hook
    deletes the points at once; when Qdrant fails it enqueues ``vector_delete`` jobs on
    ``queue`` (retried by the worker), else parks them in ``outbox`` (relayed to Redis by the
    gateway or worker), else re-raises the :class:`VectorIndexError` (the sweep counts it in
    ``hook_failures``).
    """
    if engine is None or engine.qdrant is None:
        return None
    qdrant_engine = engine

    async def on_deleted(ids: list[int]) -> None:
        try:
            await qdrant_engine.delete(ids)
            return
        except VectorIndexError as exc:
            error = exc
        if queue is not None:
            log.warning("qdrant delete failed, queued for retry: %s", error)
            await enqueue_vector_delete(queue, ids)
            return
        if outbox is not None:
            log.warning("qdrant delete failed, parked in the job outbox: %s", error)
            for p in vector_delete_payloads(ids, time.time()):
                data = encode_payload(p)
                await outbox.add(VECTOR_DELETE, job_id_for(VECTOR_DELETE, data), data, str(error))
            return
        raise error

    return on_deleted
