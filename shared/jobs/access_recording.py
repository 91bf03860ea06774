"""Batching of injection bookkeeping.

The request path records which memories it injected in memory, and one ``record_access`` job per
(owner, end user) is enqueued per flush interval, instead of one job per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from shared.jobs.payloads import RECORD_ACCESS, RecordAccessPayload
from shared.jobs.queue import JobQueue

log = logging.getLogger("mnemogate.jobs")

FLUSH_INTERVAL_S = 1.0


class AccessBatcher:
    """Collects injected memory rowids per (owner, end user); :meth:`flush` enqueues them.

    ``add`` is synchronous and O(ids); nothing here touches the store on the request path.
    """

    def __init__(self, queue: JobQueue) -> None:
        self.queue = queue
        self._pending: dict[tuple[str, str], list[int]] = {}

    def add(self, owner_id: str, user_id: str, memory_ids: list[int]) -> None:
        """Remember one injection of each of ``memory_ids`` for ``owner_id``/``user_id``."""
        if memory_ids:
            self._pending.setdefault((owner_id, user_id), []).extend(memory_ids)

    async def flush(self, now: float | None = None) -> int:
        """Enqueue one ``record_access`` job per (owner, user) pending; returns how many."""
        pending, self._pending = self._pending, {}
        at = time.time() if now is None else now
        for (owner_id, user_id), ids in pending.items():
            await self.queue.enqueue(
                RECORD_ACCESS,
                RecordAccessPayload(memory_ids=ids, at=at, owner_id=owner_id, user_id=user_id),
            )
        return len(pending)

    async def run(self, interval_s: float = FLUSH_INTERVAL_S) -> None:
        """Flush every ``interval_s`` seconds until cancelled; a final flush on the way out."""
        try:
            while True:
                await asyncio.sleep(interval_s)
                try:
                    await self.flush()
                except Exception:
                    log.exception("flushing access records failed")
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.flush())
