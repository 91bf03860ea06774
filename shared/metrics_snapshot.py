"""Scrape-time gauges of the shared state (memories stored, outbox size, queue depth).

Read from the database and Redis when ``/metrics`` is scraped rather than kept as live gauges:
every process shares them, so whichever gateway process or worker answers reports the same
values (prometheus-client's multiprocess mode cannot aggregate a process-local gauge of shared
state correctly). Each read is bounded by :data:`READ_TIMEOUT_S`; a failed read leaves the gauge
out of that scrape instead of failing it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from shared.metrics import Snapshot
from shared.store import Store

log = logging.getLogger("mnemogate.metrics")

READ_TIMEOUT_S = 1.0

QueueDepth = Callable[[], Awaitable[int]]


async def _read(what: Callable[[], Awaitable[int]]) -> int | None:
    try:
        return int(await asyncio.wait_for(what(), READ_TIMEOUT_S))
    except Exception as exc:  # a scrape reports what it can
        log.debug("metrics read failed: %s", type(exc).__name__)
        return None


async def take_snapshot(store: Store, queue_depth: QueueDepth | None) -> Snapshot:
    """The gauges of :class:`shared.metrics.Snapshot` for ``store``.

    With ``queue_depth``, also the queue's depth (jobs waiting).
    """
    stored = await _read(store.memories.count)
    outbox = await _read(store.outbox.count)
    depth = await _read(queue_depth) if queue_depth is not None else None
    return Snapshot(memories_stored=stored, outbox_jobs=outbox, queue_depth=depth)


def queue_depth_of(queue: object) -> QueueDepth | None:
    """A depth reader for a job queue.

    The arq queue's sorted-set size in Redis, or the number of running in-process jobs; None for
    anything else.
    """
    pool = getattr(queue, "pool", None)
    if pool is not None:

        async def arq_depth() -> int:
            return int(await pool.zcard(pool.default_queue_name))

        return arq_depth
    tasks = getattr(queue, "_tasks", None)
    if isinstance(tasks, dict):

        async def running() -> int:
            return len(tasks)

        return running
    return None
